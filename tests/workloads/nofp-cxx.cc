// SPDX-License-Identifier: MIT
/*
 * nofp-cxx - C++ allocations through libstdc++ (operator new, std::vector,
 * std::string), built without frame pointers like Debian's libstdc++
 * itself (the Makefile builds nofp-* with -O2 -fomit-frame-pointer):
 * main -> grow_vector -> make_strings -> std::string -> operator new, and
 * main -> new_array -> operator new[].
 *
 *   nofp-cxx [ROUNDS [hold SECONDS | abort]]   (default 200 rounds)
 *
 * hold: after the rounds, print "ready" and for SECONDS go on doing a
 * round every 10 ms, letting go of the oldest; abort: abort() after the
 * rounds, with everything still held (for a core).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>
#include <unistd.h>

#define NOIPA __attribute__((noipa))

static std::vector<std::vector<std::string>> kept_strings;
static std::vector<int *> kept_arrays;
static volatile int sink;

NOIPA std::vector<std::string> make_strings(int n)
{
	std::vector<std::string> v;

	for (int i = 0; i < n; i++)
		v.push_back(std::string(2000 + i, 'x'));
	return v;
}

NOIPA void grow_vector(int n)
{
	kept_strings.push_back(make_strings(n));
	sink = (int)kept_strings.size();
}

NOIPA int *new_array(int n)
{
	int *a = new int[n];

	a[0] = n;	/* not a tail call */
	sink = a[0];
	return a;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 200;

	for (int i = 0; i < rounds; i++) {
		grow_vector(100);
		kept_arrays.push_back(new_array(50000));
	}
	if (argc > 2 && !std::strcmp(argv[2], "abort"))
		std::abort();
	if (argc > 3 && !std::strcmp(argv[2], "hold")) {
		time_t end = std::time(nullptr) + std::atoi(argv[3]);

		std::printf("ready\n");
		std::fflush(stdout);
		while (std::time(nullptr) < end) {
			kept_strings.erase(kept_strings.begin());
			delete[] kept_arrays.front();
			kept_arrays.erase(kept_arrays.begin());
			grow_vector(100);
			kept_arrays.push_back(new_array(50000));
			usleep(10000);
		}
	}
	std::printf("%zu %zu\n", kept_strings.size(), kept_arrays.size());
	return 0;
}
