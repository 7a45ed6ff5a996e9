// SPDX-License-Identifier: MIT
/*
 * nofp-cxx - C++ allocations through libstdc++ (operator new, std::vector,
 * std::string), built without frame pointers like Debian's libstdc++
 * itself (the Makefile builds nofp-* with -O2 -fomit-frame-pointer):
 * main -> grow_vector -> make_strings -> std::string -> operator new, and
 * main -> new_array -> operator new[].
 *
 *   nofp-cxx [ROUNDS]   (default 200)
 */
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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
	std::printf("%zu %zu\n", kept_strings.size(), kept_arrays.size());
	return 0;
}
