/* A tiny test harness: TH_TEST(name) registers a case, and the executable runs exactly one case named on
 * the command line, so ctest runs every case in a fresh process (libuv's rule). `--list` prints the cases.
 * CHECK failures print the expression and location and exit 1; a case returns 77 to report a skip. */
#ifndef TH_TEST_H
#define TH_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*th_test_fn)(void);
void th_test_register(const char *name, th_test_fn fn);

#define TH_TEST(name)                                                             \
  static int name(void);                                                          \
  __attribute__((constructor)) static void th__reg_##name(void) {                 \
    th_test_register(#name, name);                                                \
  }                                                                               \
  static int name(void)

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                        \
  do {                                                                            \
    long long th__a = (long long)(a), th__b = (long long)(b);                     \
    if (th__a != th__b) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", __FILE__, \
              __LINE__, #a, #b, th__a, th__b);                                    \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

#define CHECK_STR(a, b)                                                           \
  do {                                                                            \
    const char *th__a = (a), *th__b = (b);                                        \
    if (!th__a || !th__b || strcmp(th__a, th__b) != 0) {                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n",       \
              __FILE__, __LINE__, #a, #b, th__a ? th__a : "(null)",              \
              th__b ? th__b : "(null)");                                          \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

#define TH_SKIP 77

#endif
