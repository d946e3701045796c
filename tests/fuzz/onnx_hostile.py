#!/usr/bin/env python3
"""Hostile ONNX files, written as raw protobuf bytes (no onnx package, no downloads), for the importer's
defences (compiler/import/onnx_wire.c): tests/integration/onnx_hostile.sh uploads them to the daemon, and
tests/fuzz/seeds_onnx.sh seeds fuzz.onnx with small ones.
usage: onnx_hostile.py nested LEVELS OUT   a graph whose node holds a graph attribute holding a graph ...
                                           LEVELS graphs deep (3000: about 30 KB)
       onnx_hostile.py bomb NODES OUT      a graph of NODES empty NodeProtos (5000000: 10 MB)
       onnx_hostile.py fuzzbomb NODES OUT  the same bomb as an input of fuzz.onnx's repeat mode (0xA7, a few
                                           bytes that tests/fuzz/fuzz_onnx.c expands)"""
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


def fuzzbomb(nodes):  # 0xA7, prefix length, prefix, count (4 bytes LE), pattern length, pattern
    head = bomb(0)[:-1] + varint(2 * nodes)  # the model up to the graph's length
    return bytes([0xA7, len(head)]) + head + nodes.to_bytes(4, "little") + b"\x02\x0a\x00"


def main():
    kinds = {"nested": nested, "bomb": bomb, "fuzzbomb": fuzzbomb}
    if len(sys.argv) != 4 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    data = kinds[sys.argv[1]](int(sys.argv[2]))
    with open(sys.argv[3], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
