#!/usr/bin/python3
"""Converts a torch state_dict (torch.save of model.state_dict(), or of a whole nn.Module) into tunehub's
params.bin: named float32 tensors with a magic, a version, the total size and a CRC-32 (format in
compiler/README.md). num_batches_tracked buffers are skipped; every other tensor is converted to float32.

usage: /usr/bin/python3 scripts/torch2params.py STATE_DICT.pt PARAMS.bin
"""
import struct
import sys
import zlib

MAGIC = b"THPARAMS"
VERSION = 1
HEADER = 32
ALIGN = 64


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: torch2params.py STATE_DICT.pt PARAMS.bin\n")
        return 2
    try:
        import torch
    except ImportError:
        sys.stderr.write("torch2params.py: PyTorch is not installed (apt-get install python3-torch)\n")
        return 1
    obj = torch.load(argv[1], map_location="cpu")
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        sys.stderr.write("torch2params.py: %s holds neither a state_dict nor a module\n" % argv[1])
        return 1
    body = bytearray()
    count = 0
    for name, t in obj.items():
        if name.endswith("num_batches_tracked") or not hasattr(t, "detach"):
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
    size = HEADER + len(body)
    header = MAGIC + struct.pack("<IIQII", VERSION, count, size, zlib.crc32(body) & 0xFFFFFFFF, 0)
    assert len(header) == HEADER
    with open(argv[2], "wb") as f:
        f.write(header)
        f.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
