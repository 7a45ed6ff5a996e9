// SPDX-License-Identifier: MIT
//
// rust-jemalloc - a Rust program whose global allocator is jemalloc linked
// into the executable, allocating known amounts at known sites, for
// tests/e2e/run-rust-jemalloc.sh (which computes the expected totals with
// the formulas below).
//
//   rust-jemalloc            pre, work, check, exit
//   rust-jemalloc FIFO       pre, print "rust-jemalloc: ready", wait for
//                            'w' on FIFO; work, print "work done"; wait
//                            for 'q'; check, exit (a tracer attaches with
//                            --pid while it waits)
//
// The allocator is the one jemallocator and tikv-jemallocator give a Rust
// program, written here because Debian packages only jemalloc-sys (0.3.2:
// a static jemalloc whose functions are prefixed _rjem_, its bundled one
// or Debian's renamed - see tests/tools/build-rust-jemalloc.sh; glibc's
// malloc stays the C library's own).  A
// layout whose alignment plain malloc already gives (align <= 16 and
// align <= size) goes to _rjem_malloc, _rjem_calloc and _rjem_realloc;
// any other to _rjem_mallocx, _rjem_rallocx (with MALLOCX_ALIGN, and
// MALLOCX_ZERO for zeroed memory); every free is _rjem_sdallocx, sized.
// Built without the "jemalloc" feature the program keeps Rust's default
// allocator (glibc's malloc, posix_memalign beyond 16-byte alignment):
// the same sites, for checking the checks.
//
// The sites, each #[inline(never)], with what they allocate (what goes to
// the allocator: Rust asks for exactly a Vec's capacity in bytes):
//
//   site_pre       100 Vecs of 333 bytes, before "ready"; freed at the
//                  start of the work (free_pre)
//   site_vec       1000 Vecs of 64 KiB (malloc), kept: 64,000 KiB in use
//   site_box       5000 boxes of 1 KiB (malloc), freed by free_boxes
//                  before the work ends
//   site_zeroed    200 vec![0u8; 10000] (calloc), the odd ones kept
//   site_grow      50 times a Vec of capacity 16 grown with reserve_exact
//                  to 100, 1000, 10000, 40000 and shrunk to 20000
//                  (malloc, then realloc x 5), kept
//   site_aligned   64 boxed pages of 4096 bytes aligned to 4096 (mallocx),
//                  kept
//   site_aligned_zeroed  64 zeroed blocks of 8192 bytes aligned to 4096
//                  (mallocx with MALLOCX_ZERO), freed at once
//   site_aligned_grow  16 times a Vec of 2 pages grown to 8 pages
//                  (mallocx, then rallocx), kept
//
// Every block is filled with a pattern and checked before it is freed and
// at the end; the last line is "rust-jemalloc: check ok" (or "check
// FAILED", exit 1).  The program ends with std::process::exit, which runs
// no destructor: what the sites kept is in use at exit.

#[cfg(feature = "jemalloc")]
mod jemalloc {
	use jemalloc_sys as ffi;
	use std::alloc::{GlobalAlloc, Layout};
	use std::os::raw::{c_int, c_void};

	// _Alignof(max_align_t) on x86-64 and AArch64: what malloc's
	// blocks are aligned to, if they are at least that large
	const MALLOC_ALIGN: usize = 16;

	// jemalloc's flags for a layout: none when plain malloc serves it
	fn flags(size: usize, align: usize) -> c_int {
		if align <= MALLOC_ALIGN && align <= size {
			0
		} else {
			ffi::MALLOCX_ALIGN(align)
		}
	}

	pub struct Jemalloc;

	unsafe impl GlobalAlloc for Jemalloc {
		unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
			match flags(layout.size(), layout.align()) {
				0 => ffi::malloc(layout.size()) as *mut u8,
				f => ffi::mallocx(layout.size(), f) as *mut u8,
			}
		}

		unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
			match flags(layout.size(), layout.align()) {
				0 => ffi::calloc(1, layout.size()) as *mut u8,
				f => ffi::mallocx(layout.size(), f | ffi::MALLOCX_ZERO) as *mut u8,
			}
		}

		unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
			let f = flags(layout.size(), layout.align());
			ffi::sdallocx(ptr as *mut c_void, layout.size(), f)
		}

		unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
			match flags(new_size, layout.align()) {
				0 => ffi::realloc(ptr as *mut c_void, new_size) as *mut u8,
				f => ffi::rallocx(ptr as *mut c_void, new_size, f) as *mut u8,
			}
		}
	}

	#[global_allocator]
	static GLOBAL: Jemalloc = Jemalloc;

	// the linked jemalloc's version, read through mallctl
	pub fn version() -> String {
		let mut v: *const std::os::raw::c_char = std::ptr::null();
		let mut len = std::mem::size_of_val(&v);
		let name = b"version\0";
		let rc = unsafe {
			ffi::mallctl(
				name.as_ptr() as *const _,
				&mut v as *mut _ as *mut c_void,
				&mut len,
				std::ptr::null_mut(),
				0,
			)
		};
		if rc != 0 || v.is_null() {
			return "unknown".to_string();
		}
		unsafe { std::ffi::CStr::from_ptr(v) }.to_string_lossy().into_owned()
	}
}

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::process::exit;

const PAGE: usize = 4096;

#[repr(C, align(4096))]
#[derive(Clone)]
struct Page([u8; PAGE]);

// A block's pattern: byte i of block `seed` is seed * 13 + i * 5 (mod 256).
fn pattern_byte(seed: usize, i: usize) -> u8 {
	(seed.wrapping_mul(13).wrapping_add(i.wrapping_mul(5))) as u8
}

fn fill(p: &mut [u8], seed: usize) {
	for (i, b) in p.iter_mut().enumerate() {
		*b = pattern_byte(seed, i);
	}
}

fn intact(p: &[u8], seed: usize) -> bool {
	p.iter().enumerate().all(|(i, &b)| b == pattern_byte(seed, i))
}

// What the sites keep, checked at the end.  Its vectors are made large
// enough beforehand: a site allocates nothing but its own blocks.
struct Kept {
	pre: Vec<Vec<u8>>,
	vecs: Vec<Vec<u8>>,
	zeroed: Vec<Vec<u8>>,
	grown: Vec<Vec<u8>>,
	pages: Vec<Box<Page>>,
	page_vecs: Vec<Vec<Page>>,
	bad: bool,
}

impl Kept {
	fn new() -> Kept {
		Kept {
			pre: Vec::with_capacity(100),
			vecs: Vec::with_capacity(1000),
			zeroed: Vec::with_capacity(100),
			grown: Vec::with_capacity(50),
			pages: Vec::with_capacity(64),
			page_vecs: Vec::with_capacity(16),
			bad: false,
		}
	}
}

#[inline(never)]
fn site_pre(k: &mut Kept) {
	for s in 0..100 {
		let mut v = Vec::with_capacity(333);
		v.resize(333, 0);
		fill(&mut v, s);
		k.pre.push(v);
	}
}

#[inline(never)]
fn free_pre(k: &mut Kept) {
	for (s, v) in k.pre.drain(..).enumerate() {
		k.bad |= !intact(&v, s);
	}
}

#[inline(never)]
fn site_vec(k: &mut Kept) {
	for s in 0..1000 {
		let mut v = Vec::with_capacity(64 * 1024);
		v.resize(64 * 1024, 0);
		fill(&mut v, s);
		k.vecs.push(v);
	}
}

#[inline(never)]
fn site_box(boxes: &mut Vec<Box<[u8; 1024]>>) {
	for s in 0..5000 {
		let mut b = Box::new([1u8; 1024]);
		fill(&mut b[..], s);
		boxes.push(b);
	}
}

#[inline(never)]
fn free_boxes(k: &mut Kept, boxes: Vec<Box<[u8; 1024]>>) {
	for (s, b) in boxes.into_iter().enumerate() {
		k.bad |= !intact(&b[..], s);
	}
}

#[inline(never)]
fn site_zeroed(k: &mut Kept) {
	for s in 0..200 {
		let mut v = vec![0u8; 10000];
		k.bad |= v.iter().any(|&b| b != 0);
		fill(&mut v, s);
		if s % 2 == 1 {
			k.zeroed.push(v);
		}
	}
}

#[inline(never)]
fn site_grow(k: &mut Kept) {
	for s in 0..50 {
		let mut v: Vec<u8> = Vec::with_capacity(16);
		v.resize(16, 0);
		fill(&mut v, s);
		for &size in &[100usize, 1000, 10000, 40000] {
			v.reserve_exact(size - v.len());
			k.bad |= v.capacity() != size || !intact(&v, s);
			v.resize(size, 0);
			fill(&mut v, s);
		}
		v.truncate(20000);
		v.shrink_to_fit();
		k.bad |= v.capacity() != 20000 || !intact(&v, s);
		k.grown.push(v);
	}
}

#[inline(never)]
fn site_aligned(k: &mut Kept) {
	for s in 0..64 {
		let mut p = Box::new(Page([1u8; PAGE]));
		fill(&mut p.0, s);
		k.bad |= &*p as *const Page as usize % PAGE != 0;
		k.pages.push(p);
	}
}

#[inline(never)]
fn site_aligned_zeroed(k: &mut Kept) {
	let layout = Layout::from_size_align(2 * PAGE, PAGE).unwrap();
	for s in 0..64 {
		unsafe {
			let p = alloc_zeroed(layout);
			if p.is_null() {
				k.bad = true;
				return;
			}
			let block = std::slice::from_raw_parts_mut(p, layout.size());
			k.bad |= p as usize % PAGE != 0 || block.iter().any(|&b| b != 0);
			fill(block, s);
			k.bad |= !intact(block, s);
			dealloc(p, layout);
		}
	}
}

#[inline(never)]
fn site_aligned_grow(k: &mut Kept) {
	for s in 0..16 {
		let mut v: Vec<Page> = Vec::with_capacity(2);
		v.resize(2, Page([2u8; PAGE]));
		fill(&mut v[1].0, s);
		v.reserve_exact(6);
		k.bad |= v.capacity() != 8 || v.as_ptr() as usize % PAGE != 0 || !intact(&v[1].0, s);
		v.resize(8, Page([3u8; PAGE]));
		k.page_vecs.push(v);
	}
}

#[inline(never)]
fn work(k: &mut Kept) {
	free_pre(k);
	site_vec(k);
	let mut boxes = Vec::with_capacity(5000);
	site_box(&mut boxes);
	site_zeroed(k);
	site_grow(k);
	site_aligned(k);
	site_aligned_zeroed(k);
	site_aligned_grow(k);
	free_boxes(k, boxes);
}

fn check(k: &Kept) -> bool {
	let mut ok = !k.bad;
	ok &= k.vecs.iter().enumerate().all(|(s, v)| intact(v, s));
	ok &= k.zeroed.iter().enumerate().all(|(i, v)| intact(v, 2 * i + 1));
	ok &= k.grown.iter().enumerate().all(|(s, v)| v.len() == 20000 && intact(v, s));
	ok &= k.pages.iter().enumerate().all(|(s, p)| intact(&p.0, s));
	ok &= k.page_vecs.iter().enumerate().all(|(s, v)| intact(&v[1].0, s) && v[7].0[0] == 3);
	ok
}

// Wait for the byte `want` on the FIFO; false if it cannot be read.
fn wait_for(fifo: &mut std::fs::File, want: u8) -> bool {
	let mut c = [0u8];
	loop {
		match fifo.read_exact(&mut c) {
			Ok(()) if c[0] == want => return true,
			Ok(()) => continue,
			Err(_) => return false,
		}
	}
}

#[cfg(feature = "jemalloc")]
fn allocator() -> String {
	format!("jemalloc {} (linked in, _rjem_ prefix)", jemalloc::version())
}

#[cfg(not(feature = "jemalloc"))]
fn allocator() -> String {
	"the system's (no jemalloc)".to_string()
}

fn main() {
	let args: Vec<String> = std::env::args().collect();
	if args.len() > 2 {
		eprintln!("usage: rust-jemalloc [FIFO]");
		exit(2);
	}
	let mut out = std::io::stdout();
	let mut k = Kept::new();
	site_pre(&mut k);
	let _ = writeln!(out, "rust-jemalloc: allocator {}", allocator());
	// the FIFO is opened for writing too: opening never waits for a writer
	let mut fifo = match args.get(1) {
		Some(path) => match OpenOptions::new().read(true).write(true).open(path) {
			Ok(f) => Some(f),
			Err(e) => {
				eprintln!("rust-jemalloc: {}: {}", path, e);
				exit(1);
			}
		},
		None => None,
	};
	if let Some(f) = fifo.as_mut() {
		let _ = writeln!(out, "rust-jemalloc: ready");
		let _ = out.flush();
		if !wait_for(f, b'w') {
			exit(1);
		}
	}
	work(&mut k);
	if let Some(f) = fifo.as_mut() {
		let _ = writeln!(out, "work done");
		let _ = out.flush();
		if !wait_for(f, b'q') {
			exit(1);
		}
	}
	let ok = check(&k);
	let _ = writeln!(out, "rust-jemalloc: check {}", if ok { "ok" } else { "FAILED" });
	let _ = out.flush();
	// no destructor runs: what the sites kept is in use at exit
	exit(if ok { 0 } else { 1 });
}
