"""The shipped table profiles, one JSON file each; loaded by `croupier.shared.profile.load_profile`."""
