"""Chinese readers: each reads one family of requirement over the text and its jieba word boundaries."""
