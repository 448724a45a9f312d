"""Entity linking against the bundled domains: English, lemmas, abbreviations, Chinese."""

from __future__ import annotations

from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.linking import link_mentions

AML = "https://tenet.dev/ontologies/aml#"
CLIN = "https://tenet.dev/ontologies/clinical#"


def linked(index: OntologyIndex, text: str) -> dict[str, tuple[str, float]]:
    return {e.iri: (e.mention, e.score) for e in link_mentions(index, text)}


def test_aml_prompt_links_parties_country_and_the_list_not_the_pep_class(aml: OntologyIndex) -> None:
    text = ("Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. "
            "Should this be escalated?")
    found = linked(aml, text)
    assert found[AML + "AcmeLtd"] == ("Acme Ltd", 1.0)
    assert found[AML + "JonDoe"] == ("Jon Doe", 1.0)
    assert found[AML + "pepList"][0] == "PEP list"
    assert found[AML + "CY"][0] == "Cyprus"
    assert AML + "PoliticallyExposedPerson" not in found


def test_spans_point_into_the_text(aml: OntologyIndex) -> None:
    text = "Was Jon Doe paid?"
    [entity] = link_mentions(aml, text)
    assert text[entity.start:entity.end] == entity.mention == "Jon Doe"
    assert entity.label == "Jon Doe" and entity.is_class is False


def test_classes_are_flagged_and_alt_labels_score_lower(aml: OntologyIndex,
                                                        clinical: OntologyIndex) -> None:
    [pep] = link_mentions(aml, "Is the customer a PEP?")
    assert pep.iri == AML + "PoliticallyExposedPerson" and pep.is_class
    ggo = linked(clinical, "New GGO noted.")[CLIN + "GroundGlassOpacity"]
    assert ggo[0] == "GGO" and 0.8 <= ggo[1] < 1.0


def test_lemmas_link_plural_forms(clinical: OntologyIndex) -> None:
    found = linked(clinical, "Several ground-glass opacities in both lower lobes and the right lower lobes.")
    assert found[CLIN + "GroundGlassOpacity"][0] == "ground-glass opacities"
    assert found[CLIN + "GroundGlassOpacity"][1] < 1.0
    assert found[CLIN + "RightLowerLobe"][0] == "right lower lobes"


def test_short_abbreviations_need_capitals(aml: OntologyIndex) -> None:
    assert AML + "EU" in linked(aml, "Rules of the EU apply.")
    assert AML + "EU" not in linked(aml, "the eu rules apply")


def test_chinese_labels_link_inside_a_sentence(aml: OntologyIndex, clinical: OntologyIndex) -> None:
    found = linked(aml, "阿克米有限公司向乔恩·多伊转账，他在政治公众人物名单上。")
    assert found[AML + "AcmeLtd"] == ("阿克米有限公司", 1.0)
    assert found[AML + "JonDoe"][0] == "乔恩·多伊"
    assert found[AML + "pepList"][0] == "政治公众人物名单"
    clinical_found = linked(clinical, "右肺下叶见磨玻璃影")
    assert {CLIN + "RightLowerLobe", CLIN + "GroundGlassOpacity"} <= set(clinical_found)
    [entity] = [e for e in link_mentions(clinical, "右肺下叶见磨玻璃影") if e.iri == CLIN + "RightLowerLobe"]
    assert entity.label == "右肺下叶"


def test_mixed_language_prompt_links_both(clinical: OntologyIndex) -> None:
    found = linked(clinical, "CT shows ground-glass opacity, 右肺下叶.")
    assert {CLIN + "GroundGlassOpacity", CLIN + "RightLowerLobe"} <= set(found)


def test_unrelated_text_links_nothing(clinical: OntologyIndex) -> None:
    assert link_mentions(clinical, "What is the capital of France?") == ()
