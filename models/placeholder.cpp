// TEMPORARY placeholder so the library has a source; the models owner replaces it.
