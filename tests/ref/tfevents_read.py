#!/usr/bin/python3
"""tfevents_read.py: reads a TensorBoard events file without ppa's code, for tests/test_tensorboard.sh.

The framing is checked record by record: uint64 length (little-endian), the masked CRC-32C of those 8 bytes, the
data, the masked CRC-32C of the data, each CRC computed by python3-crcmod's predefined 'crc-32c' and masked as
TensorFlow does. The data of each record is parsed by python3-protobuf with tensorflow.Event's schema (Event,
Summary, Summary.Value: the field numbers of tensorflow/core/util/event.proto and framework/summary.proto), built
here with descriptor_pb2, and must serialize back to the same bytes (no unknown field, canonical order). Any
problem: a message on stderr and exit 1.

  tfevents_read.py FILE                       one JSON line per event: {"step", "wall_time", "file_version"} or
                                              {"step", "wall_time", "values": {tag: simple_value}}
  tfevents_read.py FILE --no-timings          the same, the timing tags (names ending in _s, comm_bytes,
                                              gpu_peak_gib) left out: what two identical runs share
  tfevents_read.py FILE --compare LOG.jsonl   every line of LOG with a "step" against the events after the first
                                              (file_version "brain.Event:2"), in order: the same step, and the
                                              tags and values of the line's numbers ("train/NAME",
                                              "train/OBJ/NAME" for nested objects, "eval/NAME" under "eval"),
                                              each value the line's number rounded to float32 (round to nearest,
                                              struct's 'f'), exactly
"""
import json
import struct
import sys

import crcmod.predefined
from google.protobuf import descriptor_pb2, descriptor_pool

try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:  # protobuf < 4.21 (Debian 12's 3.21)
    GetMessageClass = None
from google.protobuf import message_factory

CRC32C = crcmod.predefined.mkCrcFun("crc-32c")


def fail(msg):
    sys.stderr.write("tfevents_read: %s\n" % msg)
    sys.exit(1)


def masked(data):
    c = CRC32C(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="tfevents_ref.proto", package="tensorflow", syntax="proto3")
    summary = fd.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL, oneof_index=0)
    value.field.add(name="node_name", number=7, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".tensorflow.Summary.Value")
    event = fd.message_type.add(name="Event")
    event.oneof_decl.add(name="what")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, oneof_index=0,
                    type_name=".tensorflow.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("tensorflow.Event")
    if GetMessageClass:
        return GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def records(path):
    data = open(path, "rb").read()
    at, k = 0, 0
    while at < len(data):
        if len(data) - at < 12:
            fail("%s: record %d: truncated header (%d bytes left)" % (path, k, len(data) - at))
        head = data[at:at + 8]
        (n,) = struct.unpack("<Q", head)
        (hc,) = struct.unpack("<I", data[at + 8:at + 12])
        if hc != masked(head):
            fail("%s: record %d at byte %d: the length's CRC does not match" % (path, k, at))
        if len(data) - at - 12 < n + 4:
            fail("%s: record %d: truncated data (%d bytes, %d left)" % (path, k, n, len(data) - at - 12))
        body = data[at + 12:at + 12 + n]
        (dc,) = struct.unpack("<I", data[at + 12 + n:at + 16 + n])
        if dc != masked(body):
            fail("%s: record %d at byte %d: the data's CRC does not match" % (path, k, at))
        yield body
        at += 16 + n
        k += 1


TIMING = ("comm_bytes", "gpu_peak_gib")


def is_timing(tag):
    name = tag.rsplit("/", 1)[-1]
    return name.endswith("_s") or name in TIMING


def events(path, no_timings=False):
    Event = event_class()
    out = []
    for i, body in enumerate(records(path)):
        e = Event()
        try:
            e.ParseFromString(body)
        except Exception as x:  # noqa: BLE001 - any parse error is the file's
            fail("%s: record %d: not a tensorflow.Event: %s" % (path, i, x))
        if e.SerializeToString(deterministic=True) != body:
            fail("%s: record %d: the bytes are not the Event's canonical serialization" % (path, i))
        d = {"step": e.step, "wall_time": e.wall_time}
        what = e.WhichOneof("what")
        if what == "file_version":
            d["file_version"] = e.file_version
        elif what == "summary":
            vals = []
            for v in e.summary.value:
                if v.WhichOneof("value") != "simple_value":
                    fail("%s: record %d: tag %s holds no simple_value" % (path, i, v.tag))
                if not (no_timings and is_timing(v.tag)):
                    vals.append([v.tag, v.simple_value])
            d["values"] = vals
        else:
            fail("%s: record %d: neither file_version nor summary" % (path, i))
        out.append(d)
    return out


def expected(line):
    """the (tag, value) pairs of one log line, in its order"""
    pairs = []

    def walk(obj, prefix):
        for k, v in obj.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                pairs.append([prefix + "/" + k, v])
            elif isinstance(v, dict):
                walk(v, prefix + "/" + k)

    for k, v in line.items():
        if k == "step":
            continue
        if k == "eval" and isinstance(v, dict):
            walk(v, "eval")
        elif isinstance(v, dict):
            walk(v, "train/" + k)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            pairs.append(["train/" + k, v])
    return pairs


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def compare(path, log):
    ev = events(path)
    if not ev or ev[0].get("file_version") != "brain.Event:2":
        fail("%s: the first event is not file_version brain.Event:2" % path)
    lines = []
    for ln, text in enumerate(open(log), 1):
        j = json.loads(text)
        if isinstance(j, dict) and isinstance(j.get("step"), int):
            lines.append((ln, j))
    if len(ev) - 1 != len(lines):
        fail("%s: %d events after the first, %s has %d lines with a step" % (path, len(ev) - 1, log, len(lines)))
    n = 0
    for (ln, j), e in zip(lines, ev[1:]):
        if e["step"] != j["step"] or "values" not in e:
            fail("%s:%d: step %s, the event has step %s" % (log, ln, j["step"], e["step"]))
        want = expected(j)
        got = e["values"]
        if [t for t, _ in want] != [t for t, _ in got]:
            fail("%s:%d: tags %s, the event has %s" % (log, ln, [t for t, _ in want], [t for t, _ in got]))
        for (t, v), (_, g) in zip(want, got):
            if f32(v) != g:
                fail("%s:%d: %s = %r, float32 %r, the event has %r" % (log, ln, t, v, f32(v), g))
            n += 1
    print("compared %d events, %d values" % (len(lines), n))


def main():
    a = sys.argv[1:]
    if len(a) == 1:
        for e in events(a[0]):
            print(json.dumps(e))
    elif len(a) == 2 and a[1] == "--no-timings":
        for e in events(a[0], True):
            print(json.dumps(e))
    elif len(a) == 3 and a[1] == "--compare":
        compare(a[0], a[2])
    else:
        fail("usage: tfevents_read.py FILE [--no-timings | --compare LOG.jsonl]")


if __name__ == "__main__":
    main()
