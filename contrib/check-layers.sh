#!/bin/sh
# check-layers.sh - every #include "..." of the sources crosses only the
# arrows contrib/layers allows: a file may include its own folder's
# headers, include/'s and arch/'s, the generated protobuf header, and the
# folders its folder's line names.  tracer/X means tracer/X/ (and tracer its top
# level).  Prints each include that crosses, and exits 1 if one does.
#
#   sh contrib/check-layers.sh [TOP]
top=${1:-.}
cd "$top" || exit 2
find include arch common elf agent tracer -name '*.[ch]' | sort | awk '
	BEGIN {
		while ((getline line < "contrib/layers") > 0) {
			if (line ~ /^[ \t]*(#|$)/)
				continue
			n = split(line, f, /[ \t]+/)
			known[f[1]] = 1
			for (i = 2; i <= n; i++)
				if (f[i] != "-")
					allow[f[1], (f[i] ~ /^(common|elf|agent)$/ ? "" : "tracer/") f[i]] = 1
		}
		bad = 0
	}
	{
		file = $0
		dir = file; sub(/\/[^\/]*$/, "", dir)
		if (!(dir in known)) {
			printf "%s: its folder %s is not in contrib/layers\n", file, dir
			bad = 1
			next
		}
		while ((getline line < file) > 0) {
			# any spelling: "# include", tabs, <...> (-I. would
			# find a project header that way too)
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*[<"]/)
				continue
			inc = line
			sub(/^[ \t]*#[ \t]*include[ \t]*[<"]/, "", inc)
			sub(/[>"].*/, "", inc)
			if (line ~ /include[ \t]*</ &&
			    inc !~ /^(common|elf|agent|tracer|include|arch)\//)
				continue	# a system header
			if (inc !~ /\//)
				continue	# its own folder, include/, generated
			to = inc; sub(/\/[^\/]*$/, "", to)
			if (to == dir ||
			    ((to == "include" || to == "arch") &&
			     dir != "include" && dir != "arch") ||
			    allow[dir, to])
				continue
			printf "%s includes %s: %s may not use %s (contrib/layers)\n", file, inc, dir, to
			bad = 1
		}
		close(file)
	}
	END { exit bad }'
