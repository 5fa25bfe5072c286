# Generated from proto/citadel/v1/*.proto (the package marker).
# Regenerate with `make proto` (scripts/gen_proto.py).
