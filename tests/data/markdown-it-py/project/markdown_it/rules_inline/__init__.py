__all__ = (
    "StateInline",
    "autolink",
    "backtick",
    "emphasis",
    "entity",
    "escape",
    "fragments_join",
    "html_inline",
    "image",
    "link",
    "link_pairs",
    "linkify",
    "newline",
    "strikethrough",
    "text",
)
from . import emphasis, strikethrough
from .autolink import autolink
from .backticks import backtick
from .balance_pairs import link_pairs
from .entity import entity
from .escape import escape
from .fragments_join import fragments_join
from .html_inline import html_inline
from .image import image
from .link import link
from .linkify import linkify
from .newline import newline
from .state_inline import StateInline
from .text import text
