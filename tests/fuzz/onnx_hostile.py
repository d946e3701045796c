#!/usr/bin/env python3
"""Hostile ONNX files, written as raw protobuf bytes (no onnx package, no downloads), for the importer's
defences (compiler/import/onnx_wire.c): tests/integration/onnx_hostile.sh uploads them to the daemon, and
tests/fuzz/seeds_onnx.sh seeds fuzz.onnx with small ones.
usage: onnx_hostile.py nested LEVELS OUT   a graph whose node holds a graph attribute holding a graph ...
                                           LEVELS graphs deep (3000: about 30 KB)
       onnx_hostile.py bomb NODES OUT      a graph of NODES empty NodeProtos (5000000: 10 MB)"""
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, payload):  # a length-delimited field
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def model(graph):  # ir_version 8, opset 13 of the default domain, the graph
    return varint(1 << 3) + varint(8) + field(8, varint(2 << 3) + varint(13)) + field(7, graph)


def nested(levels):
    g = b""
    for _ in range(levels - 1):
        attr = varint(20 << 3) + varint(5) + field(6, g)  # AttributeProto type GRAPH, g
        g = field(1, field(5, attr))  # GraphProto.node with one NodeProto.attribute
    return model(g)


def bomb(nodes):
    return model(b"\x0a\x00" * nodes)  # GraphProto.node, empty, NODES times


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("nested", "bomb"):
        sys.exit(__doc__)
    n = int(sys.argv[2])
    data = nested(n) if sys.argv[1] == "nested" else bomb(n)
    with open(sys.argv[3], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
