/*
 * report_page.js - the behaviour of pprof-alloc's HTML report.
 *
 * Reads the JSON in #pa-data and fills report_page.html: the summary, a
 * chart of the timeline (inline SVG), an icicle flame graph (one absolutely
 * placed <div> per frame wide enough to see) and the top functions of the
 * current view.  No library, no network, no eval: every string from the
 * profile goes in through textContent or setAttribute, never as markup.
 *
 * The flame tree lives in typed arrays (parent, name, depth, one value
 * array per view, children in CSR form), so 300,000 nodes cost a few
 * linear passes.  Drawing walks only frames at least MIN_PX wide: a node's
 * children are sorted largest first (per view, when first drawn) and the
 * walk stops at the first one narrower than that.
 *
 * Each section renders on its own: one that throws shows its error in
 * #pa-error and the others still draw.  The page's URL may name a view
 * and a search (fromHash).  body[data-ready] becomes "1" after
 * the first render, "error" if anything failed.
 *
 * The data (the contract with report_html.c), one JSON object:
 *   title, generated          strings: the command, an ISO UTC time
 *   summary.rows              [[label, value], ...], already formatted
 *   summary.notes, .comments  [string, ...]: warnings; the profile's comments
 *   timeline                  null, or {lines, start_unix_ns, peak}:
 *     lines                   [string, ...], one JSON reading each (bad
 *                             ones are counted and skipped)
 *     start_unix_ns           time zero of the x axis; null: the first line's
 *     peak                    null, or {unix_ns, bytes, label}
 *   flame.types               [{name, label, unit: "bytes"|"count"}, ...],
 *                             1 to 4, the first one shown first
 *   flame.names               [string, ...], the frames' names
 *   flame.nodes               [[parent, name index, value per type...], ...]:
 *                             node 0 the root (parent -1), every node after
 *                             its parent, values cumulative
 *   flame.folded              null, or a note on what was folded
 */
(function () {
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const ROW = 18;			/* flame row height, px */
const MIN_PX = 0.5;		/* narrower frames are not drawn */
const TEXT_PX = 22;		/* narrower frames get no label */
const TOP_N = 25;
const LIMIT = "cgroup limit";
const GREY = "#c9cdd2";

let failed = false;
let chart = null;		/* see initChart() */
let F = null;			/* the flame graph, see initFlame() */

/* ---------------------------------------------------------------- helpers */

function $(id) { return document.getElementById(id); }

function h(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls) e.className = cls;
	if (text != null) e.textContent = text;
	return e;
}

function svg(tag, attrs, text) {
	const e = document.createElementNS(SVGNS, tag);
	for (const k in attrs) e.setAttribute(k, attrs[k]);
	if (text != null) e.textContent = text;
	return e;
}

function arr(x) { return Array.isArray(x) ? x : []; }
function str(x) { return x == null ? "" : String(x); }
function num(x) { return typeof x === "number" && isFinite(x) ? x : null; }

function dig(o, keys) {
	for (const k of keys) {
		if (o == null || typeof o !== "object") return undefined;
		o = o[k];
	}
	return o;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

function fmtBytes(v) {
	if (!isFinite(v)) return "\u2013";
	let a = Math.abs(v), i = 0;
	while (i < UNITS.length - 1 && a >= (i ? 1023.95 : 1023.5)) {
		a /= 1024;
		i++;
	}
	return (v < 0 ? "-" : "") + (i ? a.toFixed(1) : Math.round(a)) + " " + UNITS[i];
}

function fmtCount(v) {
	if (!isFinite(v)) return "\u2013";
	return String(Math.round(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function fmtVal(v, unit) { return unit === "bytes" ? fmtBytes(v) : fmtCount(v); }

function fmtPct(a, b) {
	if (!(b > 0)) return "\u2013";
	const p = 100 * a / b;
	return p > 0 && p < 0.05 ? "<0.1%" : p.toFixed(1) + "%";
}

/* 3725 -> "1 h 2 min 5 s" */
function fmtLong(t) {
	const neg = t < 0;
	let s = Math.round(Math.abs(t));
	const hh = Math.floor(s / 3600), mm = Math.floor(s / 60) % 60;
	s %= 60;
	const out = [];
	if (hh) out.push(hh + " h");
	if (mm) out.push(mm + " min");
	if (s || !out.length) out.push(s + " s");
	return (neg ? "-" : "") + out.join(" ");
}

function fmtSecs(t) {
	const a = Math.abs(t);
	const s = t.toFixed(a < 10 ? 2 : 1) + " s";
	return a >= 120 ? s + " (" + fmtLong(t) + ")" : s;
}

/* 1, 2, 2.5, 5 times a power of ten, at least raw */
function niceStep(raw) {
	if (!(raw > 0)) return 1;
	const p = Math.pow(10, Math.floor(Math.log10(raw)));
	const f = raw / p;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

function decimals(step) {
	let d = 0;
	while (d < 6 && Math.abs(step * Math.pow(10, d) - Math.round(step * Math.pow(10, d))) > 1e-9) d++;
	return d;
}

/* Ticks from 0 to at least max, in one binary unit chosen by max. */
function bytesTicks(max, n) {
	if (!(max > 0)) max = 1024;
	let u = 0;
	while (u < UNITS.length - 1 && max >= Math.pow(1024, u + 1)) u++;
	const unit = Math.pow(1024, u), step = niceStep(max / unit / n);
	const count = Math.max(1, Math.ceil(max / unit / step - 1e-9));
	const d = decimals(step), ticks = [];
	for (let i = 0; i <= count; i++)
		ticks.push({ v: i * step * unit, label: i ? (i * step).toFixed(d) + " " + UNITS[u] : "0" });
	return { top: count * step * unit, ticks: ticks };
}

/* Ticks between lo and hi seconds: seconds, minutes or hours. */
function timeTicks(lo, hi, n) {
	const raw = (hi - lo) / n;
	let step, fmt;
	if (raw <= 30) {
		step = niceStep(raw);
		const d = decimals(step);
		fmt = (v) => v.toFixed(d) + " s";
	} else if (raw <= 1800) {
		step = [60, 120, 300, 600, 900, 1800].find((s) => s >= raw);
		fmt = (v) => (Math.abs(v) >= 3600 ? fmtLong(v) : Math.round(v / 60) + " min");
	} else {
		step = [3600, 7200, 10800, 21600, 43200, 86400].find((s) => s >= raw) ||
			86400 * Math.ceil(raw / 86400);
		fmt = (v) => Math.round(v / 3600) + " h";
	}
	/* a bounded count: with times far from 0, i * step may not move */
	const ticks = [], first = Math.ceil(lo / step - 1e-9);
	const count = Math.floor((hi + 1e-9) / step) - first;
	if (!isFinite(first) || !(count >= 0) || count > 1000) return ticks;
	for (let k = 0; k <= count; k++)
		ticks.push({ v: (first + k) * step, label: fmt((first + k) * step) });
	return ticks;
}

/* -------------------------------------------------------------- tooltips */

let tipKey = null;

function tipShow(key, build, x, y) {
	const el = $("pa-tip");
	if (key !== tipKey || el.hidden) {
		el.textContent = "";
		build(el);
		tipKey = key;
		el.hidden = false;
	}
	const w = el.offsetWidth, ht = el.offsetHeight;
	const vw = document.documentElement.clientWidth, vh = window.innerHeight;
	let left = x + 14, top = y + 16;
	if (left + w > vw - 4) left = Math.max(4, x - 14 - w);
	if (top + ht > vh - 4) top = Math.max(4, y - 12 - ht);
	el.style.left = left + "px";
	el.style.top = top + "px";
}

function tipHide() {
	$("pa-tip").hidden = true;
	tipKey = null;
}

function tipRow(el, label, value, color) {
	const r = h("div", "pa-tip-row");
	const l = h("span", "pa-tip-label", label);
	if (color) {
		const sw = h("span", "pa-swatch");
		sw.style.background = color;
		l.insertBefore(sw, l.firstChild);
	}
	r.appendChild(l);
	r.appendChild(h("span", "pa-tip-value", value));
	el.appendChild(r);
}

/* ---------------------------------------------------------------- errors */

function showError(where, err) {
	failed = true;
	let box = $("pa-error");
	if (!box) {
		box = h("div", "pa-error");
		box.id = "pa-error";
		document.body.insertBefore(box, document.body.firstChild);
	}
	const msg = err && err.message ? err.message : str(err);
	box.appendChild(h("div", null, where + ": " + msg));
	box.hidden = false;
	document.body.dataset.ready = "error";
}

function guard(where, fn) {
	return function (ev) {
		try {
			return fn.call(this, ev);
		} catch (e) {
			showError(where, e);
		}
	};
}

/* --------------------------------------------------------- header, summary */

function renderHeader(d) {
	const cmd = str(d.title);
	$("pa-cmd").textContent = cmd || "(command unknown)";
	const g = str(d.generated);
	const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z$/.exec(g);
	$("pa-generated").textContent = g ? "Generated " + (m ? m[1] + " " + m[2] + " UTC" : g) : "";
}

function renderSummary(s) {
	s = s && typeof s === "object" ? s : {};
	const rows = $("pa-summary-rows");
	for (const r of arr(s.rows)) {
		if (!Array.isArray(r)) continue;
		const tr = h("tr");
		tr.appendChild(h("th", null, str(r[0])));
		tr.appendChild(h("td", null, str(r[1])));
		rows.appendChild(tr);
	}
	const notes = arr(s.notes);
	if (notes.length) {
		const ul = $("pa-notes-list");
		for (const n of notes) ul.appendChild(h("li", null, str(n)));
		$("pa-notes").hidden = false;
	}
	const comments = arr(s.comments);
	if (comments.length) {
		$("pa-comments-title").textContent = "Profile comments (" + comments.length + ")";
		$("pa-comments-text").textContent = comments.map(str).join("\n");
		$("pa-comments").hidden = false;
	}
}

/* ------------------------------------------------------------------ chart */

function mallinfo(l) { return dig(l, ["allocator", "mallinfo2"]); }
function jemalloc(l) { return dig(l, ["allocator", "jemalloc"]); }
function common(l) { return dig(l, ["allocator", "common"]); }
function either(a, b) { return a !== null ? a : b; }

/* z: drawing order, the highest on top */
const SERIES = [
	{ name: "RSS", color: "#1f6feb", z: 4,
	  get: (l) => either(num(dig(l, ["process", "smaps_rollup", "Rss"])),
			     num(dig(l, ["process", "status", "VmRSS"]))) },
	{ name: "Anon RSS", color: "#8250df", z: 3,
	  get: (l) => either(num(dig(l, ["process", "smaps_rollup", "Anonymous"])),
			     num(dig(l, ["process", "status", "RssAnon"]))) },
	{ name: "Heap in use (sampled)", color: "#e8590c", z: 6,
	  get: (l) => num(dig(l, ["heap", "inuse_bytes"])) },
	{ name: "Allocator in use", color: "#1a7f37", z: 5,
	  get: (l) => {
		const m = mallinfo(l), j = jemalloc(l);
		if (m && num(m.uordblks) !== null) return m.uordblks + (num(m.hblkhd) || 0);
		if (j) return num(j.allocated);
		const c = common(l);
		return c ? num(c.in_use) : null;
	  } },
	{ name: "Allocator free", color: "#7cc47f", z: 2,
	  get: (l) => {
		const m = mallinfo(l), j = jemalloc(l);
		if (m && num(m.fordblks) !== null) return m.fordblks;
		if (j && num(j.active) !== null && num(j.allocated) !== null) return j.active - j.allocated;
		const c = common(l);
		return c ? num(c.free) : null;
	  } },
	{ name: "cgroup usage", color: "#57606a", z: 1,
	  get: (l) => num(dig(l, ["cgroup", "common", "usage"])) },
	{ name: LIMIT, color: "#cf222e", z: 0, dash: "6 4",
	  get: (l) => num(dig(l, ["cgroup", "common", "limit"])) },
];

function initChart(tl) {
	const lines = tl && typeof tl === "object" ? arr(tl.lines) : [];
	const pts = [];
	let bad = 0;
	for (const s of lines) {
		let o = null;
		try {
			o = typeof s === "string" ? JSON.parse(s) : null;
		} catch (e) {
			o = null;
		}
		if (o && typeof o === "object" && num(o.unix_ns) !== null) pts.push(o);
		else bad++;
	}
	if (bad) {
		const note = $("pa-chart-note");
		note.textContent = bad + (bad === 1 ? " unreadable line" : " unreadable lines") + " skipped.";
		note.hidden = false;
	}
	const box = $("pa-chart-box");
	if (!pts.length) {
		box.appendChild(h("p", "pa-empty",
			"No timeline: record with --interval SECONDS to chart memory over time."));
		return;
	}
	pts.sort((a, b) => a.unix_ns - b.unix_ns);
	const t0 = num(tl.start_unix_ns) !== null ? tl.start_unix_ns : pts[0].unix_ns;
	const n = pts.length, xs = new Float64Array(n);
	for (let i = 0; i < n; i++) xs[i] = (pts[i].unix_ns - t0) / 1e9;
	const series = [];
	for (const def of SERIES) {
		const ys = new Float64Array(n);
		let max = -Infinity;
		for (let i = 0; i < n; i++) {
			const v = def.get(pts[i]);
			ys[i] = v === null ? NaN : v;
			if (v !== null && v > max) max = v;
		}
		if (max > -Infinity) series.push({ name: def.name, color: def.color, z: def.z, dash: def.dash, ys: ys, max: max });
	}
	const pk = tl.peak && typeof tl.peak === "object" ? tl.peak : null;
	const peak = pk && num(pk.unix_ns) !== null ? {
		x: (pk.unix_ns - t0) / 1e9,
		y: num(pk.bytes),
		label: str(pk.label) || (num(pk.bytes) !== null ? "peak " + fmtBytes(pk.bytes) : "peak"),
	} : null;
	const span = xs[n - 1] - xs[0];
	$("pa-chart-sub").textContent = n === 1 ? "1 reading" :
		n + " readings over " + (span < 120 ? span.toFixed(1) + " s" : fmtLong(span));
	if (!series.length) {
		box.appendChild(h("p", "pa-empty", "The timeline has no memory readings."));
		return;
	}
	chart = { xs: xs, series: series, hidden: new Set(), peak: peak, width: 0 };
	/* A cgroup that holds much more than this process (a desktop's or a
	 * CI's slice, a pod of several containers) would flatten every other
	 * line: its lines start hidden, and the note says why. */
	let own = 0, cg = 0;
	for (const s of series) {
		if (s.name === "cgroup usage") cg = s.max;
		else if (s.name !== LIMIT && s.max > own) own = s.max;
	}
	if (own > 0 && cg > 4 * own) {
		chart.hidden.add("cgroup usage");
		chart.hidden.add(LIMIT);
		const note = $("pa-chart-note");
		note.textContent = (note.hidden ? "" : note.textContent + " ") +
			"The cgroup's lines are hidden: its usage (up to " + fmtBytes(cg) +
			") is more than 4 times this process's memory, so it holds other processes too. Click them in the legend to show them.";
		note.hidden = false;
	}
	const legend = $("pa-legend");
	legend.addEventListener("click", guard("Chart", (ev) => {
		const b = ev.target.closest("button.pa-legend-item");
		if (!b) return;
		const name = b.getAttribute("data-name");
		if (chart.hidden.has(name)) chart.hidden.delete(name);
		else chart.hidden.add(name);
		drawChart();
	}));
	drawChart();
}

function drawChart() {
	const c = chart, box = $("pa-chart-box"), legend = $("pa-legend");
	const W = Math.max(300, box.clientWidth || 800);
	const H = W < 640 ? 250 : 330;
	const M = { l: 66, r: 18, t: c.peak ? 30 : 16, b: 30 };
	const pw = W - M.l - M.r, ph = H - M.t - M.b;
	const xs = c.xs, n = xs.length;
	c.width = box.clientWidth;

	const vis = c.series.filter((s) => !c.hidden.has(s.name));
	const limit = vis.find((s) => s.name === LIMIT);
	let ymax = 0;
	for (const s of vis) if (s !== limit && s.max > ymax) ymax = s.max;
	if (c.peak && c.peak.y !== null && c.peak.y > ymax) ymax = c.peak.y;
	const limitOff = !!limit && ymax > 0 && limit.max >= 4 * ymax;
	if (limit && !limitOff && limit.max > ymax) ymax = limit.max;
	const drawn = vis.filter((s) => !(limitOff && s === limit)).sort((a, b) => a.z - b.z);

	/* legend */
	legend.textContent = "";
	for (const s of c.series) {
		if (s.name === LIMIT && limitOff) {
			const off = h("span", "pa-legend-item pa-legend-off");
			off.setAttribute("data-name", s.name);
			off.appendChild(h("span", "pa-swatch pa-swatch-dash"));
			off.lastChild.style.borderColor = s.color;
			off.appendChild(document.createTextNode(LIMIT + " " + fmtBytes(s.max) + " (off the chart)"));
			legend.appendChild(off);
			continue;
		}
		const b = h("button", "pa-legend-item");
		b.type = "button";
		b.setAttribute("data-name", s.name);
		b.setAttribute("aria-pressed", c.hidden.has(s.name) ? "false" : "true");
		b.title = c.hidden.has(s.name) ? "Show this series" : "Hide this series";
		const sw = h("span", s.dash ? "pa-swatch pa-swatch-dash" : "pa-swatch");
		if (s.dash) sw.style.borderColor = s.color;
		else sw.style.background = s.color;
		b.appendChild(sw);
		b.appendChild(document.createTextNode(s.name));
		legend.appendChild(b);
	}

	/* scales */
	let xlo = Math.min(0, xs[0]), xhi = xs[n - 1];
	if (c.peak) {
		xlo = Math.min(xlo, c.peak.x);
		xhi = Math.max(xhi, c.peak.x);
	}
	if (n === 1 && !c.peak) xhi = xs[0] + Math.max(xs[0] - xlo, 0.5);	/* a lone reading mid-chart */
	if (!(xhi - xlo > 1e-9)) xhi = xlo + 1;
	const yt = bytesTicks(ymax, Math.max(3, Math.round(ph / 55)));
	const sx = (v) => M.l + (v - xlo) / (xhi - xlo) * pw;
	const sy = (v) => M.t + ph - v / yt.top * ph;

	const root = svg("svg", {
		width: W, height: H, viewBox: "0 0 " + W + " " + H,
		class: "pa-chart-svg", role: "img", "aria-label": "Memory over time",
	});
	const grid = svg("g", { class: "pa-grid" });
	for (const t of yt.ticks) {
		const y = sy(t.v).toFixed(1);
		grid.appendChild(svg("line", { x1: M.l, x2: M.l + pw, y1: y, y2: y }));
		grid.appendChild(svg("text", { x: M.l - 8, y: y, dy: "0.32em", "text-anchor": "end" }, t.label));
	}
	const xt = timeTicks(xlo, xhi, Math.max(2, Math.floor(pw / 90)));
	for (const t of xt) {
		const x = sx(t.v);
		grid.appendChild(svg("line", { class: "pa-tick", x1: x.toFixed(1), x2: x.toFixed(1), y1: M.t + ph, y2: M.t + ph + 5 }));
		const anchor = x > W - 30 ? "end" : x < M.l + 10 ? "start" : "middle";
		grid.appendChild(svg("text", { x: x.toFixed(1), y: M.t + ph + 19, "text-anchor": anchor }, t.label));
	}
	grid.appendChild(svg("line", { class: "pa-axis", x1: M.l, x2: M.l + pw, y1: M.t + ph, y2: M.t + ph }));
	grid.appendChild(svg("line", { class: "pa-axis", x1: M.l, x2: M.l, y1: M.t, y2: M.t + ph }));
	root.appendChild(grid);

	/* series: a path through runs of readings, a dot for a lone one */
	for (const s of drawn) {
		const g = svg("g", { class: "pa-series", "data-name": s.name });
		let d = "", run = 0, lx = 0, ly = 0;
		const dot = (x, y) => g.appendChild(svg("circle", { cx: x, cy: y, r: 3.5, fill: s.color }));
		for (let i = 0; i < n; i++) {
			const v = s.ys[i];
			if (v !== v) {
				if (run === 1) dot(lx, ly);
				run = 0;
				continue;
			}
			lx = sx(xs[i]).toFixed(1);
			ly = sy(v).toFixed(1);
			d += (run ? "L" : "M") + lx + " " + ly;
			run++;
		}
		if (run === 1) dot(lx, ly);
		if (d && n > 1) {
			const p = svg("path", { d: d, fill: "none", stroke: s.color, "stroke-width": 1.8, "stroke-linejoin": "round" });
			if (s.dash) p.setAttribute("stroke-dasharray", s.dash);
			g.insertBefore(p, g.firstChild);
		}
		root.appendChild(g);
	}

	/* the peak */
	if (c.peak) {
		const g = svg("g", { class: "pa-peak" });
		const x = sx(c.peak.x);
		g.appendChild(svg("line", { x1: x.toFixed(1), x2: x.toFixed(1), y1: M.t - 6, y2: M.t + ph }));
		if (c.peak.y !== null)
			g.appendChild(svg("circle", { cx: x.toFixed(1), cy: sy(c.peak.y).toFixed(1), r: 4.5 }));
		/* the label above the plot, clear of the data */
		const right = x > M.l + pw * 0.7, left = x < M.l + pw * 0.3;
		g.appendChild(svg("text", { x: (right ? x + 4 : left ? x - 4 : x).toFixed(1), y: M.t - 10,
			"text-anchor": right ? "end" : left ? "start" : "middle" }, c.peak.label));
		root.appendChild(g);
	}

	/* hover: a cursor at the nearest reading */
	const cur = svg("g", { class: "pa-cursor", visibility: "hidden" });
	const cline = svg("line", { y1: M.t, y2: M.t + ph });
	cur.appendChild(cline);
	const cdots = drawn.map((s) => cur.appendChild(svg("circle", { r: 3.5, fill: s.color })));
	root.appendChild(cur);
	const hover = svg("rect", { class: "pa-hover", x: M.l, y: M.t, width: pw, height: ph });
	root.appendChild(hover);
	hover.addEventListener("mousemove", guard("Chart", (ev) => {
		const r = root.getBoundingClientRect();
		const t = xlo + (ev.clientX - r.left - M.l) / pw * (xhi - xlo);
		let lo = 0, hi = n - 1;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (xs[mid] < t) lo = mid + 1;
			else hi = mid;
		}
		if (lo > 0 && t - xs[lo - 1] < xs[lo] - t) lo--;
		const i = lo, x = sx(xs[i]).toFixed(1);
		cline.setAttribute("x1", x);
		cline.setAttribute("x2", x);
		drawn.forEach((s, k) => {
			const v = s.ys[i];
			cdots[k].setAttribute("visibility", v === v ? "visible" : "hidden");
			if (v === v) {
				cdots[k].setAttribute("cx", x);
				cdots[k].setAttribute("cy", sy(v).toFixed(1));
			}
		});
		cur.setAttribute("visibility", "visible");
		tipShow("chart" + i, (el) => {
			el.appendChild(h("div", "pa-tip-title", fmtSecs(xs[i])));
			for (const s of c.series) {
				const v = s.ys[i];
				tipRow(el, s.name, v === v ? fmtBytes(v) : "no reading", s.color);
			}
		}, ev.clientX, ev.clientY);
	}));
	hover.addEventListener("mouseleave", () => {
		cur.setAttribute("visibility", "hidden");
		tipHide();
	});

	box.textContent = "";
	box.appendChild(root);
}

/* ------------------------------------------------------------ flame graph */

function initFlame(fl) {
	const box = $("pa-flame-box");
	const types = (fl && typeof fl === "object" ? arr(fl.types) : [])
		.filter((t) => t && typeof t === "object")
		.map((t, i) => ({ name: str(t.name) || "view" + i, label: str(t.label) || str(t.name) || "view " + i,
				  unit: t.unit === "bytes" ? "bytes" : "count" }));
	if (!types.length) {
		box.appendChild(h("p", "pa-empty", "No flame graph data in this report."));
		showTopEmpty("Nothing in this view.");
		return;
	}

	/* names, one id per distinct string */
	const raw = arr(fl.names), seen = new Map(), canon = new Int32Array(raw.length + 1), names = [];
	for (let i = 0; i <= raw.length; i++) {
		const s = i < raw.length ? str(raw[i]) : "?";
		let k = seen.get(s);
		if (k === undefined) {
			k = names.length;
			names.push(s);
			seen.set(s, k);
		}
		canon[i] = k;
	}
	const unknown = canon[raw.length];

	/* nodes; a malformed one (or one under it) is dropped: parent -2 */
	const nodes = arr(fl.nodes), N = nodes.length, T = types.length;
	const parent = new Int32Array(N), name = new Int32Array(N), depth = new Int32Array(N);
	const vals = types.map(() => new Float64Array(N));
	let bad = 0;
	for (let i = 0; i < N; i++) {
		const r = nodes[i];
		const p = Array.isArray(r) ? r[0] : null;
		if (i === 0 ? p !== -1 : !(Number.isInteger(p) && p >= 0 && p < i && parent[p] !== -2)) {
			parent[i] = -2;
			bad++;
			continue;
		}
		parent[i] = p;
		depth[i] = i ? depth[p] + 1 : 0;
		const ni = r[1];
		name[i] = Number.isInteger(ni) && ni >= 0 && ni < raw.length ? canon[ni] : unknown;
		for (let t = 0; t < T; t++) {
			const v = r[2 + t];
			vals[t][i] = typeof v === "number" && v > 0 && isFinite(v) ? v : 0;
		}
	}

	/* children, CSR */
	const cstart = new Int32Array(N + 1);
	for (let i = 1; i < N; i++) if (parent[i] >= 0) cstart[parent[i] + 1]++;
	for (let i = 0; i < N; i++) cstart[i + 1] += cstart[i];
	const kids = new Int32Array(cstart[N]), fill = cstart.slice(0, N);
	for (let i = 1; i < N; i++) if (parent[i] >= 0) kids[fill[parent[i]]++] = i;

	F = {
		types: types, names: names, N: N, parent: parent, name: name, depth: depth,
		vals: vals, cstart: cstart, kids: kids, order: [], self: [], top: [],
		colors: new Array(names.length), view: 0, focus: 0, hit: null, frames: [],
		anyHit: 0, width: 0,
	};

	if (bad) {
		const note = $("pa-folded");
		note.textContent = bad + (bad === 1 ? " malformed node" : " malformed nodes") + " (and what is under them) left out.";
		note.hidden = false;
	}
	if (typeof fl.folded === "string" && fl.folded) {
		const note = $("pa-folded");
		note.textContent = fl.folded + (note.hidden ? "" : " " + note.textContent);
		note.hidden = false;
	}

	/* view switch */
	const seg = $("pa-views");
	types.forEach((t, i) => {
		const lab = h("label", "pa-seg-item");
		const inp = h("input");
		inp.type = "radio";
		inp.name = "pa-view";
		inp.value = t.name;
		inp.checked = i === 0;
		inp.addEventListener("change", guard("Flame graph", () => { if (inp.checked) setView(i); }));
		lab.appendChild(inp);
		lab.appendChild(h("span", null, t.label));
		seg.appendChild(lab);
	});

	/* search, zoom, tooltip */
	const input = $("pa-search");
	input.addEventListener("input", guard("Search", () => setSearch(input.value)));
	input.addEventListener("keydown", guard("Search", (ev) => {
		if (ev.key === "Escape") {
			input.value = "";
			setSearch("");
		}
	}));
	$("pa-reset").addEventListener("click", guard("Flame graph", () => zoom(0)));
	box.addEventListener("click", guard("Flame graph", (ev) => {
		const e = ev.target.closest(".pa-frame");
		if (e && e.paNode !== undefined) zoom(e.paNode);
	}));
	box.addEventListener("mousemove", guard("Flame graph", (ev) => {
		const e = ev.target.closest(".pa-frame");
		if (!e || e.paNode === undefined) return tipHide();
		const n = e.paNode;
		tipShow("f" + F.view + ":" + n, (el) => frameTip(el, n), ev.clientX, ev.clientY);
	}));
	box.addEventListener("mouseleave", tipHide);
	$("pa-top").tBodies[0].addEventListener("click", guard("Top functions", (ev) => {
		const tr = ev.target.closest("tr");
		if (!tr || tr.paName === undefined) return;
		input.value = tr.paName;
		setSearch(tr.paName, true);
	}));
	$("pa-top").tBodies[0].addEventListener("keydown", guard("Top functions", (ev) => {
		const tr = ev.target.closest("tr");
		if ((ev.key === "Enter" || ev.key === " ") && tr && tr.paName !== undefined) {
			ev.preventDefault();
			input.value = tr.paName;
			setSearch(tr.paName, true);
		}
	}));

	setView(0);
}

function frameTip(el, n) {
	const t = F.view, v = F.vals[t], unit = F.types[t].unit, p = F.parent[n];
	el.appendChild(h("div", "pa-tip-name", F.names[F.name[n]]));
	tipRow(el, F.types[t].label, fmtVal(v[n], unit));
	tipRow(el, "Of all", fmtPct(v[n], v[0]));
	if (p >= 0) tipRow(el, "Of caller", fmtPct(v[n], v[p]));
	tipRow(el, "Self", fmtVal(selfOf(t)[n], unit));
	el.appendChild(h("div", "pa-tip-hint", n === F.focus ? "" : "Click to zoom"));
}

/* children of n, largest first in view t: sorted when first drawn */
function kidsOf(t, n) {
	let o = F.order[t];
	if (!o) o = F.order[t] = { kids: F.kids.slice(), done: new Uint8Array(F.N) };
	const a = F.cstart[n], b = F.cstart[n + 1];
	if (!o.done[n] && b - a > 1) {
		const v = F.vals[t], names = F.names, nm = F.name;
		o.kids.subarray(a, b).sort((x, y) => v[y] - v[x] ||
			(names[nm[x]] < names[nm[y]] ? -1 : names[nm[x]] > names[nm[y]] ? 1 : x - y));
	}
	o.done[n] = 1;
	return o.kids;
}

function selfOf(t) {
	if (F.self[t]) return F.self[t];
	const v = F.vals[t], p = F.parent, s = new Float64Array(F.N);
	for (let i = 0; i < F.N; i++) if (p[i] !== -2) s[i] = v[i];
	for (let i = 1; i < F.N; i++) if (p[i] >= 0) s[p[i]] -= v[i];
	for (let i = 0; i < F.N; i++) if (s[i] < v[i] * 1e-9) s[i] = 0;
	return (F.self[t] = s);
}

function frameColor(n) {
	const k = F.name[n];
	if (F.colors[k]) return F.colors[k];
	const s = F.names[k];
	let c = GREY;
	if (s !== "[other]" && s !== "[truncated]") {
		let x = 2166136261;
		for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), 16777619);
		x >>>= 0;
		c = "hsl(" + (6 + x % 38) + "," + (70 + (x >>> 8) % 22) + "%," + (60 + (x >>> 16) % 13) + "%)";
	}
	return (F.colors[k] = c);
}

function setView(t) {
	F.view = t;
	if (!(F.vals[t][F.focus] > 0)) F.focus = 0;
	const ty = F.types[t], total = F.vals[t][0];
	$("pa-flame-total").textContent = total > 0 ? "Total " + fmtVal(total, ty.unit) : "";
	tipHide();
	drawFlame();
	drawTop();
	updateMatch();
}

function zoom(n) {
	if (n === F.focus) return;
	F.focus = n;
	tipHide();
	drawFlame();
}

function drawFlame() {
	const box = $("pa-flame-box"), t = F.view, v = F.vals[t];
	box.textContent = "";
	F.frames = [];
	$("pa-reset").disabled = F.focus === 0;
	if (!(F.N && F.parent[0] === -1 && v[0] > 0)) {
		box.style.height = "";
		box.appendChild(h("p", "pa-empty", "Nothing in this view."));
		return;
	}
	const W = box.clientWidth || 800, f = F.focus;
	F.width = box.clientWidth;
	const scale = W / v[f], cs = F.cstart, depth = F.depth, names = F.names, nm = F.name;
	const hit = F.hit, frag = document.createDocumentFragment(), frames = F.frames;
	let deepest = depth[f];

	const add = (n, x, w, anc) => {
		const e = document.createElement("div");
		let cls = anc ? "pa-frame pa-anc" : "pa-frame";
		if (hit && hit[nm[n]]) cls += " pa-hit";
		const label = w >= TEXT_PX;
		if (label) cls += " pa-t";
		e.className = cls;
		const s = names[nm[n]];
		e.setAttribute("data-name", s);
		e.setAttribute("data-depth", depth[n]);
		e.style.cssText = "left:" + x.toFixed(2) + "px;width:" + (w >= 3 ? w - 1 : w).toFixed(2) +
			"px;top:" + depth[n] * ROW + "px;background:" + (n === 0 ? GREY : frameColor(n));
		if (label) e.textContent = s;
		e.paNode = n;
		frag.appendChild(e);
		frames.push(e);
	};

	const chain = [];
	for (let a = F.parent[f]; a >= 0; a = F.parent[a]) chain.push(a);
	while (chain.length) add(chain.pop(), 0, W, true);
	const sn = [f], sx = [0];
	while (sn.length) {
		const n = sn.pop(), x = sx.pop(), w = v[n] * scale;
		add(n, x, w, false);
		if (depth[n] > deepest) deepest = depth[n];
		let cx = x;
		const end = x + w, order = kidsOf(t, n);
		for (let k = cs[n]; k < cs[n + 1]; k++) {
			const c = order[k], cw = Math.min(v[c] * scale, end - cx);
			if (cw < MIN_PX) break;
			sn.push(c);
			sx.push(cx);
			cx += cw;
		}
	}
	box.style.height = (deepest + 1) * ROW + "px";
	box.classList.toggle("pa-searching", !!hit);
	box.appendChild(frag);
}

/* ----------------------------------------------------------------- search */

function compileSearch(text, literal) {
	const m = literal ? null : /^\/(.+)\/([imsu]*)$/.exec(text);
	if (m) {
		try {
			return { re: new RegExp(m[1], m[2] || "i") };
		} catch (e) {
			/* not a regex after all: match it as text */
		}
	}
	const low = text.toLowerCase();
	return { test: (s) => s.toLowerCase().indexOf(low) >= 0 };
}

function setSearch(text, literal) {
	text = text.trim();
	if (!text) {
		F.hit = null;
	} else {
		const m = compileSearch(text, literal), names = F.names, hit = new Uint8Array(names.length);
		const test = m.re ? (s) => m.re.test(s) : m.test;
		let any = 0;
		for (let k = 0; k < names.length; k++) if (test(names[k])) hit[k] = any = 1;
		F.hit = hit;
		F.anyHit = any;
	}
	const hit = F.hit, nm = F.name;
	for (const e of F.frames) e.classList.toggle("pa-hit", !!hit && hit[nm[e.paNode]] === 1);
	$("pa-flame-box").classList.toggle("pa-searching", !!hit);
	updateMatch();
}

/* the matched frames' values, each counted once: not under another match */
function updateMatch() {
	const out = $("pa-match"), hit = F.hit;
	if (!hit) {
		out.textContent = "";
		return;
	}
	if (!F.anyHit) {
		out.textContent = "No match";
		return;
	}
	const t = F.view, v = F.vals[t], p = F.parent, nm = F.name, N = F.N;
	const under = new Uint8Array(N);
	let sum = 0;
	for (let i = 0; i < N; i++) {
		if (p[i] === -2) continue;
		const up = p[i] >= 0 ? under[p[i]] : 0, me = hit[nm[i]];
		if (me && !up) sum += v[i];
		under[i] = up | me;
	}
	out.textContent = "Matched: " + fmtVal(sum, F.types[t].unit) + " (" + fmtPct(sum, v[0]).replace("\u2013", "0.0%") + ")";
}

/* ---------------------------------------------------------- top functions */

function showTopEmpty(msg) {
	const p = $("pa-top-empty");
	p.textContent = msg;
	p.hidden = !msg;
}

function topOf(t) {
	if (F.top[t]) return F.top[t];
	const v = F.vals[t], N = F.N, K = F.names.length, nm = F.name, p = F.parent;
	const self = selfOf(t), selfBy = new Float64Array(K), totBy = new Float64Array(K);
	for (let i = 1; i < N; i++) if (p[i] >= 0) selfBy[nm[i]] += self[i];
	/* total: a node counts unless an ancestor has its name */
	if (N && p[0] === -1) {
		const on = new Int32Array(K), cs = F.cstart, kids = F.kids, st = [];
		for (let k = cs[0]; k < cs[1]; k++) if (v[kids[k]] > 0) st.push(kids[k]);
		while (st.length) {
			const n = st.pop();
			if (n < 0) {
				on[nm[~n]]--;
				continue;
			}
			if (!on[nm[n]]) totBy[nm[n]] += v[n];
			on[nm[n]]++;
			st.push(~n);
			for (let k = cs[n]; k < cs[n + 1]; k++) if (v[kids[k]] > 0) st.push(kids[k]);
		}
	}
	/* [other] is frames folded together, not a function */
	const ids = [], names = F.names;
	for (let k = 0; k < K; k++) if (selfBy[k] > 0 && names[k] !== "[other]") ids.push(k);
	ids.sort((a, b) => selfBy[b] - selfBy[a] || (names[a] < names[b] ? -1 : 1));
	const top = { count: ids.length, rows: ids.slice(0, TOP_N).map((k) => ({ name: names[k], self: selfBy[k], total: totBy[k] })) };
	return (F.top[t] = top);
}

function pctCell(a, b) {
	const td = h("td", "pa-num pa-pct");
	const bar = h("span", "pa-bar");
	bar.style.width = Math.min(100, b > 0 ? 100 * a / b : 0).toFixed(1) + "%";
	td.appendChild(bar);
	td.appendChild(h("span", "pa-pct-text", fmtPct(a, b)));
	return td;
}

function drawTop() {
	const t = F.view, ty = F.types[t], root = F.vals[t][0], tb = $("pa-top").tBodies[0];
	tb.textContent = "";
	$("pa-top-sub").textContent = ty.label;
	if (!(root > 0)) return showTopEmpty("Nothing in this view.");
	const top = topOf(t);
	if (!top.rows.length) return showTopEmpty("No functions below the root in this view.");
	showTopEmpty("");
	$("pa-top-sub").textContent = ty.label + " \u00b7 top " + top.rows.length + " of " + fmtCount(top.count) + " by self";
	for (const r of top.rows) {
		const tr = h("tr");
		tr.tabIndex = 0;
		tr.paName = r.name;
		const fn = h("td", "pa-fn", r.name);
		fn.title = r.name;
		tr.appendChild(fn);
		tr.appendChild(h("td", "pa-num", fmtVal(r.self, ty.unit)));
		tr.appendChild(pctCell(r.self, root));
		tr.appendChild(h("td", "pa-num", fmtVal(r.total, ty.unit)));
		tr.appendChild(pctCell(r.total, root));
		tb.appendChild(tr);
	}
}

/* ------------------------------------------------------------------- main */

function section(where, fn) {
	try {
		fn();
	} catch (e) {
		showError(where, e);
	}
}

let rafId = 0;
function onResize() {
	if (rafId) return;
	rafId = requestAnimationFrame(guard("Resize", () => {
		rafId = 0;
		if (chart && $("pa-chart-box").clientWidth !== chart.width) drawChart();
		if (F && $("pa-flame-box").clientWidth !== F.width) drawFlame();
	}));
}

/*
 * A link to a view: "#view=peak_inuse_space&search=peak_site" opens the
 * flame graph on that sample type with that search (either may be left
 * out; an unknown view is ignored).
 */
function fromHash(hash) {
	if (!F || !hash || hash.length < 2) return;
	const q = new URLSearchParams(hash.slice(1));
	const view = q.get("view"), search = q.get("search");
	if (view) {
		const i = F.types.findIndex((t) => t.name === view);
		if (i >= 0) {
			for (const inp of document.getElementsByName("pa-view")) inp.checked = inp.value === view;
			setView(i);
		}
	}
	if (search) {
		/* as text: a link's /regex/ could be made to run for ever */
		$("pa-search").value = search;
		setSearch(search, true);
	}
}

function main() {
	let data;
	try {
		const el = $("pa-data");
		if (!el) throw new Error("the page has no #pa-data element");
		data = JSON.parse(el.textContent);
		if (!data || typeof data !== "object") throw new Error("the data is not a JSON object");
	} catch (e) {
		showError("Report data", e);
		return;
	}
	section("Header", () => renderHeader(data));
	section("Summary", () => renderSummary(data.summary));
	section("Chart", () => initChart(data.timeline));
	section("Flame graph", () => initFlame(data.flame));
	section("Flame graph", () => fromHash(location.hash));
	window.addEventListener("resize", onResize);
	if (window.ResizeObserver) {	/* also a scrollbar coming or going */
		const ro = new ResizeObserver(onResize);
		ro.observe($("pa-chart-box"));
		ro.observe($("pa-flame-box"));
	}
	if (!failed) document.body.dataset.ready = "1";
}

main();
})();
