#!/usr/bin/env bash
# scripts/lint.sh on small trees of its own: a banned call in product code fails it and is named; the same
# words in a comment, in a string, in tests/ or as part of a longer name pass; clang-format is checked only
# once .clang-format-enforced exists. Then the real tree, which must be clean.
set -euo pipefail
lint=$(cd "$(dirname "$0")/../.." && pwd)/scripts/lint.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/server" "$t/store" "$t/tests"
cp "$root/.clang-format" "$t/"
cat >"$t/server/ok.c" <<'C'
/* sprintf(x) in a comment, and "strcpy(" in a string, are not calls; it gets (a pool) neither. */
static const char *s = "strcat(a, b)";
int my_atoi(const char *p);
int f(void) {
  return my_atoi(s);
}
C
printf 'void t(char *b) { sprintf(b, "x"); }\n' >"$t/tests/t.c"
"$lint" "$t" || { echo "FAIL: a clean tree was refused"; exit 1; }
printf 'void g(char *b) {\n  sprintf(b, "%%d", 1);\n}\n' >"$t/store/bad.c"
if out=$("$lint" "$t" 2>&1); then echo "FAIL: sprintf( in store/bad.c passed"; exit 1; fi
grep -q 'store/bad.c:2: banned function sprintf()' <<<"$out" || { echo "FAIL: not named: $out"; exit 1; }
rm "$t/store/bad.c"
if command -v clang-format >/dev/null; then
  printf 'int h(void){return 2;}\n' >"$t/server/ugly.c"
  "$lint" "$t" || { echo "FAIL: clang-format checked without .clang-format-enforced"; exit 1; }
  touch "$t/.clang-format-enforced"
  if "$lint" "$t" >/dev/null 2>&1; then echo "FAIL: an unformatted file passed"; exit 1; fi
  clang-format -i "$t/server/ugly.c" "$t/server/ok.c"
  "$lint" "$t" || { echo "FAIL: formatted files were refused"; exit 1; }
fi
"$lint" "$root" || { echo "FAIL: the tree has findings"; exit 1; }
echo PASS
