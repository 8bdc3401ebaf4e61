"""What is wrong with a picture, as a class would see it.

Each check reads a ``Picture`` (gallery/read.py) and names what fails it: a text over another
text, two texts on one line so close that they read as one word, a text on a tensor (or map,
or plot) it does not belong to, a text cut by its view's edge, type below the mode's least
size, a text that does not stand out from what is behind it, a tensor drawn smaller than its
own label's type, and axis words that say something other than what their maps' axes hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage

from mha_explorer.core.display.colors import contrast_ratio
from mha_explorer.qt.gallery.read import Picture
from mha_explorer.qt.picture import DrawnShape, DrawnText

KINDS = ("text on text", "run together", "text on a tensor", "cut", "small", "contrast", "icon",
         "axis words")
TOUCH = 1.0  # px: boxes that share less than this are side by side, not on each other
LEAST_CONTRAST = 4.5  # WCAG AA for body text
NORMAL_LEAST_PX = 11.0  # the everyday window's least type
PRESENTING_LEAST = 0.025  # presentation: of the screen's height
# two texts on one line closer than this share of their type's em read as one word (a space
# is about a quarter of an em)
SPACE_EM = 0.2
# what an axis may hold (a map says it: core.display.head_maps.MapAxes's kinds), and the words
# that name each; a map of X has features, not keys. Longer names are read first, so "dims of
# one head" is not also read as "head".
AXIS_WORDS = {
    "query": ("query", "queries"),
    "key": ("key", "keys"),
    "token": ("token", "tokens"),
    "feature": ("feature", "features"),
    "head_dim": ("dims of one head", "dim of one head"),
    "width": ("each matrix's columns",),
    "head": ("head", "heads"),
    "layer": ("layer", "layers"),
    "position": ("position", "positions", "distance"),
}
ROLE_WORDS = ("rows:", "columns:")  # the line's own heading, not a claim


@dataclass(frozen=True)
class Fault:
    picture: str
    kind: str
    texts: tuple[str, ...]
    where: str
    detail: str = ""

    def __str__(self) -> str:
        words = " | ".join(repr(t) for t in self.texts)
        detail = f"; {self.detail}" if self.detail else ""
        return f"{self.picture}: {self.kind}: {words} ({self.where}{detail})"


def least_px(picture: Picture) -> float:
    return PRESENTING_LEAST * picture.screen_height if picture.presenting else NORMAL_LEAST_PX


def _overlap(a: QRectF, b: QRectF) -> bool:
    shared = a.intersected(b)
    return shared.width() > TOUCH and shared.height() > TOUCH


def _inside(rect: QRectF, area: QRectF) -> bool:
    return area.adjusted(-TOUCH, -TOUCH, TOUCH, TOUCH).contains(rect)


def _where(*texts: DrawnText) -> str:
    owners = dict.fromkeys(t.owner for t in texts)
    return ", ".join(owners)


def _seen(text: DrawnText) -> QRectF:
    """The part of a text in sight (what is cut away is the cut check's)."""
    return text.rect.intersected(text.clip)


def texts_on_texts(picture: Picture) -> Iterable[Fault]:
    seen = sorted(((_seen(t), t) for t in picture.texts), key=lambda p: p[0].left())
    for i, (ra, a) in enumerate(seen):
        for rb, b in seen[i + 1:]:
            if rb.left() >= ra.right() - TOUCH:
                break
            if _overlap(ra, rb) and not (a.text == b.text and a.rect == b.rect):
                yield Fault(picture.name, "text on text", (a.text, b.text), _where(a, b))


def _carries(shapes: dict, text: DrawnText, shape: DrawnShape) -> bool:
    """Whether ``text`` belongs on ``shape``: it is drawn on it, or on a part of it."""
    if not text.on:
        return False
    if text.on == shape.name:
        return True
    own = shapes.get((text.owner, text.on))
    return own is not None and _inside(own.rect, shape.rect)


def _one_line(a: QRectF, b: QRectF) -> bool:
    """Whether two single lines of text share a line: most of the shorter's height."""
    shared = min(a.bottom(), b.bottom()) - max(a.top(), b.top())
    return shared >= 0.6 * min(a.height(), b.height())


def texts_run_together(picture: Picture) -> Iterable[Fault]:
    """Two texts of one view on one line, closer than a space: read as one word ('h0h1')."""
    seen = sorted(((_seen(t), t) for t in picture.texts if t.text.strip() and not t.turned),
                  key=lambda p: p[0].left())
    for i, (ra, a) in enumerate(seen):
        for rb, b in seen[i + 1:]:
            em = min(a.pixel_size, b.pixel_size)
            gap = rb.left() - ra.right()
            if gap > SPACE_EM * em:
                if rb.left() > ra.right() + 4 * em:
                    break
                continue
            one_line = (ra.height() < 2 * a.pixel_size and rb.height() < 2 * b.pixel_size
                        and _one_line(ra, rb))
            if (a.owner == b.owner and one_line and gap >= -TOUCH and not _overlap(ra, rb)
                    and not (a.unit and a.unit == b.unit)):
                yield Fault(picture.name, "run together", (a.text, b.text), _where(a, b),
                            f"{max(gap, 0.0):.1f} px apart in {em:.0f} px type")


def texts_on_shapes(picture: Picture) -> Iterable[Fault]:
    by_name = {(s.owner, s.name): s for s in picture.shapes}
    for text in picture.texts:
        seen = _seen(text)
        # a view's own tensors: another view's text is never drawn on them (a view's tensor
        # reaching past its edge is not in sight where the next widget's words are)
        under = [s for s in picture.shapes if s.owner == text.owner and _overlap(seen, s.rect)
                 and not _carries(by_name, text, s)]
        if under:
            names = ", ".join(f"{s.kind} {s.name!r}" for s in under[:3])
            yield Fault(picture.name, "text on a tensor", (text.text,), _where(text),
                        f"on {names} of {under[0].owner}")


def texts_cut(picture: Picture) -> Iterable[Fault]:
    for text in picture.texts:
        if not _inside(text.rect, text.clip):
            r, c = text.rect, text.clip
            yield Fault(picture.name, "cut", (text.text,), _where(text),
                        f"text x {r.left():.0f}..{r.right():.0f} y {r.top():.0f}..{r.bottom():.0f}, "
                        f"view x {c.left():.0f}..{c.right():.0f} y {c.top():.0f}..{c.bottom():.0f}")


def texts_small(picture: Picture) -> Iterable[Fault]:
    least = least_px(picture)
    for text in picture.texts:
        if text.pixel_size < least - 0.05:
            yield Fault(picture.name, "small", (text.text,), _where(text),
                        f"{text.pixel_size:.1f} px, least {least:.1f} px")


def tensors_as_icons(picture: Picture) -> Iterable[Fault]:
    for shape in picture.shapes:
        side = min(shape.rect.width(), shape.rect.height())
        if shape.label_px and side < shape.label_px - 0.5:
            yield Fault(picture.name, "icon", (shape.name,), shape.owner,
                        f"{side:.0f} px beside {shape.label_px:.0f} px type")


def _area(owner: str) -> str:
    return owner.split(":")[0].strip()


def _axis_kinds(text: DrawnText, shapes: list[DrawnShape]) -> set[str]:
    """What the axis ``text`` names holds in the maps it speaks for: the one it names
    (``of``), else every map of its part of the window that says what its axes hold."""
    maps = [s for s in shapes if _area(s.owner) == _area(text.owner) and any(s.axes)]
    if text.of:
        maps = [s for s in maps if s.name == text.of]
    return {s.axes[0] if text.role == "rows" else s.axes[1] for s in maps}


def said_kinds(words: str) -> set[str]:
    """The kinds of axis ``words`` name (AXIS_WORDS), longer names first."""
    words = f" {words.lower()} "
    for mark in ("(", ")", ",", "·", "↓", "→"):
        words = words.replace(mark, f" {mark} ")
    for role in ROLE_WORDS:
        words = words.replace(f" {role} ", " ", 1) if words.startswith(f" {role} ") else words
    said = set()
    names = sorted(((n, k) for k, ns in AXIS_WORDS.items() for n in ns), key=lambda p: -len(p[0]))
    for name, kind in names:
        if f" {name} " in words:
            said.add(kind)
            words = words.replace(f" {name} ", " ")
    return said


def axis_words(picture: Picture) -> Iterable[Fault]:
    for text in picture.texts:
        if text.role not in ("rows", "columns"):
            continue
        kinds = _axis_kinds(text, picture.shapes)
        if not kinds:
            continue
        said = said_kinds(text.text)
        if len(kinds) > 1 or said != kinds:
            held, say = " and ".join(sorted(kinds)), ", ".join(sorted(said)) or "nothing"
            yield Fault(picture.name, "axis words", (text.text,), _where(text),
                        f"the maps' {text.role} hold: {held}; the words say: {say}")


# contrast, read against the grab ---------------------------------------------------------------
def _pixels(image: QImage) -> np.ndarray:
    """[h, w, 3] RGB of the grab."""
    rgb = image.convertToFormat(QImage.Format.Format_RGB32)
    w, h = rgb.width(), rgb.height()
    data = np.frombuffer(rgb.constBits(), dtype=np.uint8, count=rgb.bytesPerLine() * h)
    bgra = data.reshape(h, rgb.bytesPerLine() // 4, 4)[:, :w]  # [h, w, 4] in memory order B, G, R, A
    return bgra[..., 2::-1]


def _luminance(rgb: np.ndarray) -> np.ndarray:
    v = rgb.astype(np.float64) / 255
    lin = np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


def _box(rect: QRectF, dpr: float, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    h, w = shape
    x0, y0 = max(0, int(rect.left() * dpr)), max(0, int(rect.top() * dpr))
    x1, y1 = min(w, int(np.ceil(rect.right() * dpr))), min(h, int(np.ceil(rect.bottom() * dpr)))
    return x0, y0, x1, y1


def _ground(pixels: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray | None:
    """The commonest colour on the edge of ``box``: what the text lies on."""
    x0, y0, x1, y1 = box
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    edge = np.concatenate([pixels[y0, x0:x1], pixels[y1 - 1, x0:x1], pixels[y0:y1, x0],
                           pixels[y0:y1, x1 - 1]])
    packed = (edge[:, 0].astype(np.int64) << 16) | (edge[:, 1].astype(np.int64) << 8) | edge[:, 2]
    values, counts = np.unique(packed, return_counts=True)
    top = int(values[np.argmax(counts)])
    return np.array([(top >> 16) & 255, (top >> 8) & 255, top & 255])


def _hex(rgb) -> str:
    return "#{:02X}{:02X}{:02X}".format(*(int(v) for v in rgb))


def _ink_over(ink: QColor, ground: np.ndarray) -> np.ndarray:
    """The ink as it lands on the ground (a translucent ink is mixed with it)."""
    a = ink.alphaF()
    return np.array([ink.red(), ink.green(), ink.blue()]) * a + ground * (1 - a)


def texts_faint(picture: Picture) -> Iterable[Fault]:
    pixels = _pixels(picture.image)
    dpr = picture.image.devicePixelRatio()
    for text in picture.texts:
        seen = text.rect.intersected(text.clip)
        box = _box(seen, dpr, pixels.shape[:2])
        if text.ground is not None:
            ground = np.array([text.ground.red(), text.ground.green(), text.ground.blue()])
        else:
            ground = _ground(pixels, box)
        if ground is None:
            continue
        if text.ink.isValid():
            ink = _ink_over(text.ink, ground)
        else:  # the pixel that stands out most from the ground is the ink's own colour
            x0, y0, x1, y1 = box
            inside = pixels[y0:y1, x0:x1].reshape(-1, 3)
            lum = _luminance(inside)
            g = _luminance(ground[None])[0]
            ratio = (np.maximum(lum, g) + 0.05) / (np.minimum(lum, g) + 0.05)
            ink = inside[int(np.argmax(ratio))]
        ratio = contrast_ratio(_hex(ink), _hex(ground))
        if ratio < LEAST_CONTRAST:
            yield Fault(picture.name, "contrast", (text.text,), _where(text),
                        f"{ratio:.2f}:1, ink {_hex(ink)} on {_hex(ground)}")


CHECKS = (texts_on_texts, texts_run_together, texts_on_shapes, texts_cut, texts_small, texts_faint,
          tensors_as_icons, axis_words)


def faults(picture: Picture) -> list[Fault]:
    """Everything wrong with ``picture``, check by check."""
    return [fault for check in CHECKS for fault in check(picture)]
