"""The onion: stages, payloads, the registry, the chain compiler, Pipeline and Turn."""
