// SPDX-License-Identifier: MIT
/*
 * replay.c - a main for a fuzz target without libFuzzer: every file named,
 * and every regular file in every directory named, is given once to
 * LLVMFuzzerTestOneInput, in a buffer of exactly its size (ASan sees any
 * read past the end, as under libFuzzer).
 *
 * The Makefile links each tests/fuzz/fuzz-NAME.c with this file into
 * BUILD/tests/fuzz/replay-NAME, with the build's own compiler and flags:
 * in build-san/ that is the target under ASan and UBSan, with no clang and
 * no instrumented copy of the tracer's library to build first.
 * tests/e2e/run-fuzz.sh replays the seed corpora with it in `make test`;
 * the fuzzing itself (clang, libFuzzer, new inputs) is tests/fuzz/run.sh,
 * in `make fuzz` and `make check-long`.
 *
 * Says "replay: input PATH" on stderr before each input (the last such
 * line names a finding), prints "replay: N inputs" and exits 0 when every input went through; a
 * finding aborts (a sanitizer's report, or the target's own abort()), and
 * an input that cannot be read exits 1.  An input that takes more than
 * 10 s is a finding too (SIGALRM), as libFuzzer's -timeout=10 makes it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long replayed;

/* 0, or -errno when the file cannot be read (said on stderr). */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long size;
	int err = 0;

	if (!f) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return err;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		goto out_close;
	}
	/* malloc(0) may be NULL: one byte then, of which none is given */
	buf = malloc(size ? (size_t)size : 1);
	if (!buf) {
		err = -ENOMEM;
		fprintf(stderr, "replay: %s: out of memory\n", path);
		goto out_close;
	}
	if (size && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		err = -EIO;
		fprintf(stderr, "replay: %s: short read\n", path);
		goto out_free;
	}
	fprintf(stderr, "replay: input %s\n", path);	/* a finding's name */
	alarm(10);
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	alarm(0);
	replayed++;
out_free:
	free(buf);
out_close:
	fclose(f);
	return err;
}

/* Every regular file of the directory, in name order (a finding names
 * the same input on every run). */
static int replay_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	int n, i, err = 0;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return err;
	}
	for (i = 0; i < n; i++) {
		struct stat st;

		if (!err && names[i]->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir,
			     names[i]->d_name) < (int)sizeof(path) &&
		    !stat(path, &st) && S_ISREG(st.st_mode))
			err = replay_file(path);
		free(names[i]);
	}
	free(names);
	return err;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, err = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIRECTORY...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc && !err; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		err = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
	}
	if (err)
		return 1;
	printf("replay: %lu inputs\n", replayed);
	return 0;
}
