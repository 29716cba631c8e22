# SPDX-License-Identifier: BSD-3-Clause
"""The fields of a pmtx region's header that black-box tests read from
the file itself (src/region/layout.h)."""

INCOMPAT_OFFSET = 24  # struct pmtx_hdr.feat_incompat
TWIN_RESEAL = 8       # PMTX_FEAT_INCOMPAT_TWIN_RESEAL (format 3.5)


def incompat(path):
    """The region's incompatible feature mask."""
    with open(path, "rb") as f:
        f.seek(INCOMPAT_OFFSET)
        return int.from_bytes(f.read(8), "little")
