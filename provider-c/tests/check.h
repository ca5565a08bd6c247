/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h - the unit tests' one assertion: CHECK(cond) reports a failed
 * condition with its place and counts it in `failures`, which main() turns
 * into the exit status.
 */
#ifndef MRCE_TEST_CHECK_H
#define MRCE_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                          \
			failures++;                                        \
		}                                                          \
	} while (0)

#endif
