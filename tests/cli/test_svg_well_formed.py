"""Every SVG the app writes parses as XML, whatever the sentence holds.

XML 1.0 forbids most control characters, even as references; a sentence may hold
them (a token "\\x01c"), and the SVG writer copied them into the file. Checked here
with the standard library's own XML reader, on the export of a sentence full of
them and on any text at all."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st
from test_cli_invalid import run_main

from mha_explorer.core.text.xml_chars import REPLACEMENT, well_formed

HOSTILE_WORDS = ("x \x01c y " + " ".join(f"w{chr(c)}" for c in range(1, 32) if chr(c) not in "\t\n\r")
                 + " \x7f \ufffe \uffff &amp; <b> ]]> \"q\" 'a'")


def test_an_export_of_a_sentence_with_control_characters_is_well_formed_xml(tmp_path):
    out = tmp_path / "out"
    rc, _out, err = run_main(["export", "--sentence", HOSTILE_WORDS, "--out", str(out), "--format", "svg",
                              "--no-tables", "--d-model", "8", "--heads", "2", "--batch", "1"])
    assert rc == 0, err
    svgs = sorted(out.glob("*.svg"))
    assert len(svgs) == 18  # nine stages, each with its maps
    for svg in svgs:
        root = ET.parse(svg).getroot()  # raises on a file that is not XML
        assert root.tag.endswith("svg")
    maps = ET.parse(out / "01-input-heads.svg").iter()
    texts = "".join(t.text or "" for t in maps if t.tag.endswith("text"))
    assert "c" in texts and REPLACEMENT in texts  # the token is still there, its control shown as �


@given(st.text(st.characters(codec=None), max_size=40))
def test_any_text_in_an_element_or_a_reference_comes_out_well_formed(text):
    refs = "".join(f"&#{ord(c)};&#x{ord(c):x};" for c in text[:4])
    document = f'<svg><text x="1">{text.replace("&", "&amp;").replace("<", "&lt;")}{refs}</text></svg>'
    ET.fromstring(well_formed(document.encode("utf-8", "surrogatepass")))
