"""The points `minictx run` appends after a results file's HDF5 part (outputs/README.md,
"Points appended after the HDF5 part"), which h5py does not see: outputs/plot.py and the
tests that watch a running job read them here. Needs PyYAML only for a file that has some."""
import struct

RECORD_MAGIC = b"MCTXPT01"


def hdf5_end(head):
    """The end-of-file address in the HDF5 superblock at the start of `head` (its first 64 bytes)."""
    version = head[8]
    offset_size = head[13] if version < 2 else head[9]
    addresses = {0: 24, 1: 28}.get(version, 12)  # base address, then free space or extension, then EOF
    return int.from_bytes(head[addresses + 2 * offset_size:addresses + 3 * offset_size], "little")


def fnv1a64(data):
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def appended_points(path):
    """The points appended after the file's HDF5 part, as dicts named like its groups
    (outputs/README.md, "Points appended after the HDF5 part"). A record cut short or
    failing its checksum ends them."""
    with open(path, "rb") as f:
        at = hdf5_end(f.read(64))
        f.seek(at)
        tail = f.read()
    points, at = [], 0
    while len(tail) - at >= 24 and tail[at:at + 8] == RECORD_MAGIC:
        (length,) = struct.unpack_from("<Q", tail, at + 8)
        if length > len(tail) - at - 24:
            break
        payload = tail[at + 16:at + 16 + length]
        if struct.unpack_from("<Q", tail, at + 16 + length)[0] != fnv1a64(payload):
            break
        import yaml  # only files with appended points need it
        points.append(yaml.safe_load(payload))
        at += 24 + length
    return points
