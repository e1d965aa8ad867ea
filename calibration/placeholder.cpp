// TEMPORARY placeholder so the library has a source; the calibration owner replaces it.
