"""The memory store (MEMORY.md, USER.md) and the memory tool."""
