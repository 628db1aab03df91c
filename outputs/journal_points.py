"""The points of a results file that are in its journal only: those a run recorded since it
last wrote the file whole, when it was killed before it could (outputs/README.md, "The
journal"). A finished file has no journal. Needs nothing but Python; reads no HDF5."""
import json
import zlib


def journal_points(results, journal_id=None):
    """The points recorded in RESULTS.journal, in run order, as dicts named like a point's HDF5
    group. With JOURNAL_ID (the file's root attribute journal_id) only the records of the run
    that wrote RESULTS: a journal beside a file another run has since rewritten is not its."""
    try:
        with open(results + ".journal", "rb") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    points = []
    for line in lines:
        # The CRC-32 covers what follows {"crc32":"XXXXXXXX", newline included: a line cut
        # short by a kill, or damaged, fails it.
        try:
            whole = line.startswith(b'{"crc32":"') and zlib.crc32(line[20:]) == int(line[10:18], 16)
        except ValueError:
            whole = False
        if not whole:
            continue
        record = json.loads(line)
        if journal_id is None or record["journal_id"] == journal_id:
            points.append(record["point"])
    return points
