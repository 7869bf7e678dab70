"""Readers: files and transcripts in, validated chunk records out."""
