"""tunehub-pull: the bundle that suits this machine, from a tunehub daemon, for shell users."""
import argparse
import shutil
import sys

from .client import Client
from .errors import TunehubError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tunehub-pull",
                                 description="Pull the bundle of NETWORK at BATCH that this machine runs best "
                                             "(?target=auto with its CPU features), waiting for a build; "
                                             "prints the cached bundle's path (or --out's).")
    ap.add_argument("network")
    ap.add_argument("batch", type=int)
    ap.add_argument("--framework", default="llvm", help="llvm (default) or cuda")
    ap.add_argument("--url", default="http://127.0.0.1:8080", help="the daemon (default %(default)s)")
    ap.add_argument("--token-file", help="a file holding the bearer token (first line)")
    ap.add_argument("--out", help="copy the bundle to FILE")
    ap.add_argument("--target", default="auto", help="auto (default: chosen for this machine), native, a CPU "
                                                      "name, x86-64-vN or sm_XX")
    ap.add_argument("--precision", help="fp32 (default) or tf32 (cuda)")
    ap.add_argument("--alias", help="the version an alias pins")
    ap.add_argument("--verify-key", metavar="PUB.pem", help="refuse the bundle unless its signed provenance "
                                                              "verifies with this Ed25519 public key")
    a = ap.parse_args(argv)
    token = None
    if a.token_file:
        with open(a.token_file, encoding="utf-8") as f:
            token = f.readline().strip() or None
    try:
        path = Client(a.url, token, verify_key=a.verify_key).pull(
            a.network, a.batch, framework=a.framework, precision=a.precision, alias=a.alias, target=a.target)
        if a.out:
            shutil.copyfile(path, a.out)
            path = a.out
    except TunehubError as e:
        print(f"tunehub-pull: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"tunehub-pull: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
