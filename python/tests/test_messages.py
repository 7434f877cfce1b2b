"""Error messages name a NULL address "NULL" (issue 22, item 10): PyUnicode_FromFormat's %p
puts "0x" before what the C library prints, and glibc prints NULL as "(nil)", so these
read "0x(nil)". Local checks only (no collective): safe at any PE count."""
import pytest

import ushmem

CALLS = {
    "free": lambda: ushmem.free(0),
    "getmem source": lambda: ushmem.getmem(bytearray(8), 0, 8, 0),
    "putmem dest": lambda: ushmem.putmem(0, b"x", 1, 0),
    "SymmetricBuffer ptr": lambda: ushmem.SymmetricBuffer(8, ptr=0, own_data=False),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_null_address_reads_null(name):
    with pytest.raises((ushmem.Error, ValueError)) as info:
        CALLS[name]()
    msg = str(info.value)
    assert "NULL" in msg and "nil" not in msg, msg
