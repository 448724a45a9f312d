"""Readers with an English and a Chinese half over one shared table (marks, word classes, layouts)."""
