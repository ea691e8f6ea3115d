"""Text games: native procedural games (``native/``) and TextWorld games (``textworld/``)."""
