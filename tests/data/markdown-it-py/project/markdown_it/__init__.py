"""A Python port of Markdown-It"""

__all__ = ("MarkdownIt",)
__version__ = "4.2.0"

from .main import MarkdownIt
