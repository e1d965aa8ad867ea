// TEMPORARY placeholder; removed once sim has sources.
