"""Role cards: Jinja2 templates rendered with StrictUndefined."""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmflow.core.errors import TemplateError

if TYPE_CHECKING:
    import jinja2

_CARD_SUFFIXES = (".j2", ".jinja", ".jinja2", ".md", ".txt")


@lru_cache(maxsize=8)
def _environment(search_path: tuple[str, ...]) -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


@lru_cache(maxsize=256)
def _inline_template(search_path: tuple[str, ...], card: str) -> jinja2.Template:
    """An inline card compiled once: Jinja compiles a template string to Python code on every
    `from_string`, about a millisecond for a short card (the loader caches only files)."""
    return _environment(search_path).from_string(card)


def is_card_path(card: str) -> bool:
    return "\n" not in card and card.endswith(_CARD_SUFFIXES)


def render_card(card: str, variables: dict[str, Any], search_path: tuple[str, ...] = (".",)) -> str:
    """Render a card (a template string or a file name found on `search_path`).

    Raises:
        TemplateError: naming the template and the missing variable or syntax error.
    """
    import jinja2

    is_path = is_card_path(card)
    label = card if is_path else "<inline card>"
    try:
        template = (
            _environment(search_path).get_template(card)
            if is_path
            else _inline_template(search_path, card)
        )
        return template.render(**variables)
    except jinja2.UndefinedError as exc:
        hint = _closest_variable(exc.message or "", variables)
        raise TemplateError(
            f"role card {label}: {exc.message}{hint}; pass it as a card variable"
        ) from None
    except jinja2.TemplateNotFound:
        where = ", ".join(str(Path(p).resolve()) for p in search_path)
        raise TemplateError(f"role card {card!r} not found (searched {where})") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"role card {label}, line {exc.lineno}: {exc.message}") from None


def _closest_variable(message: str, variables: dict[str, Any]) -> str:
    """` (did you mean 'task'?)` when the undefined name is close to a variable given."""
    missing = message.split("'")[1] if message.count("'") >= 2 else ""
    close = difflib.get_close_matches(missing, list(variables), n=1) if missing else []
    return f" (did you mean {close[0]!r}?)" if close else ""
