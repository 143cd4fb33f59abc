"""The shipped table profiles, one JSON file each; loaded by `shared.profile.load_profile`."""
