#!/usr/bin/python3
"""Converts a torch state_dict (torch.save of model.state_dict(), or of a whole nn.Module) into tunehub's
params.bin: named float32 tensors with a magic, a version, the total size and a CRC-32 (format in
compiler/README.md). Works for torchvision's CNNs and vit_b_16 and for Hugging Face's BertModel.

Every floating tensor is converted to float32 under its state_dict name. num_batches_tracked buffers are
skipped silently (batch-norm bookkeeping, as ever); other non-floating tensors (BertModel's int64 buffers
embeddings.position_ids and embeddings.token_type_ids) are skipped too, and their count is printed on
stderr. With --strip-prefix P (e.g. `bert.` for a BertForSequenceClassification state_dict), names that
start with P lose it and the tensors without it (the task head: classifier.*, cls.*) are left out, also
counted on stderr.

usage: /usr/bin/python3 scripts/torch2params.py [--strip-prefix PREFIX] STATE_DICT.pt PARAMS.bin
"""
import argparse
import struct
import sys
import zlib

MAGIC = b"THPARAMS"
VERSION = 1
HEADER = 32
ALIGN = 64


def some(names, most=6):
    """The first `most` names, comma-separated, and how many more."""
    more = ", ... (%d more)" % (len(names) - most) if len(names) > most else ""
    return ", ".join(names[:most]) + more


def main(argv):
    ap = argparse.ArgumentParser(prog="torch2params.py", description="state_dict -> params.bin")
    ap.add_argument("--strip-prefix", default="", metavar="PREFIX",
                    help="drop PREFIX from the names that have it and leave out the tensors that do not")
    ap.add_argument("state_dict", metavar="STATE_DICT.pt")
    ap.add_argument("params", metavar="PARAMS.bin")
    args = ap.parse_args(argv[1:])
    try:
        import torch
    except ImportError:
        sys.stderr.write("torch2params.py: PyTorch is not installed (apt-get install python3-torch)\n")
        return 1
    obj = torch.load(args.state_dict, map_location="cpu")
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        sys.stderr.write("torch2params.py: %s holds neither a state_dict nor a module\n" % args.state_dict)
        return 1
    body = bytearray()
    count = 0
    not_float = []
    outside = []
    for name, t in obj.items():
        if name.endswith("num_batches_tracked") or not hasattr(t, "detach"):
            continue
        if args.strip_prefix:
            if not name.startswith(args.strip_prefix):
                outside.append(name)
                continue
            name = name[len(args.strip_prefix):]
        if not t.is_floating_point():
            not_float.append(name)
            continue
        t = t.detach().to(torch.float32).contiguous()
        nb = name.encode("utf-8")
        body += struct.pack("<I", len(nb)) + nb + struct.pack("<I", t.dim())
        for d in t.shape:
            body += struct.pack("<Q", d)
        pad = (ALIGN - (HEADER + len(body)) % ALIGN) % ALIGN
        body += b"\0" * pad
        body += t.numpy().astype("<f4").tobytes()
        count += 1
    if not_float:
        sys.stderr.write("torch2params.py: skipped %d non-floating tensor(s): %s\n"
                         % (len(not_float), some(not_float)))
    if outside:
        sys.stderr.write("torch2params.py: left out %d tensor(s) without the prefix %r: %s\n"
                         % (len(outside), args.strip_prefix, some(outside)))
    if count == 0:
        sys.stderr.write("torch2params.py: no floating tensor to write\n")
        return 1
    size = HEADER + len(body)
    header = MAGIC + struct.pack("<IIQII", VERSION, count, size, zlib.crc32(body) & 0xFFFFFFFF, 0)
    assert len(header) == HEADER
    with open(args.params, "wb") as f:
        f.write(header)
        f.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
