"""Pure domain: values and rules, no I/O, standard library only."""
