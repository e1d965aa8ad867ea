// TEMPORARY placeholder so the library has a source; the policy owner replaces it.
