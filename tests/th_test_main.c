/* The harness's main(): runs the one case named in argv[1], or lists the cases with --list. */
#include "th_test.h"

#define TH__MAX_TESTS 512

static struct {
  const char *name;
  th_test_fn fn;
} th__tests[TH__MAX_TESTS];
static int th__ntests;

void th_test_register(const char *name, th_test_fn fn) {
  if (th__ntests < TH__MAX_TESTS) {
    th__tests[th__ntests].name = name;
    th__tests[th__ntests].fn = fn;
    th__ntests++;
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < th__ntests; i++) printf("%s\n", th__tests[i].name);
    return argc < 2 ? 2 : 0;
  }
  for (int i = 0; i < th__ntests; i++) {
    if (strcmp(th__tests[i].name, argv[1]) == 0) {
      int rc = th__tests[i].fn();
      if (rc == 0) fprintf(stderr, "PASS %s\n", argv[1]);
      return rc;
    }
  }
  fprintf(stderr, "no test case named '%s' (use --list)\n", argv[1]);
  return 2;
}
