"""The prompt cache: repeated prompts served from stored, already watermarked utterances (docs/prompt-cache.md)."""
