"""ScriptedUser: every rule of docs/original-harness.md §2.2 tool 8, hand-computed, plus the real released scripts."""
from __future__ import annotations

import copy

import pytest

from ecab import schema
from ecab.env.user import (TOO_LONG, TOO_MANY_TURNS, ScriptedUser, original_score, persona_is_empty,
                           profile_response, strict_score)

def make_script(slots: list[tuple[str, list[str]]], **extra) -> schema.ClarificationScript:
    data = {"clarification_slots": [{"slot_id": sid, "linked_rubric_ids": [], "hidden_info": "",
                                     "trigger_keywords": kws, "user_response": f"answer {sid}", "revealed": False}
                                    for sid, kws in slots]}
    data.update(extra)
    return schema.ClarificationScript.from_dict(data)


SCRIPT = make_script([("A", ["color", "finish"]), ("B", ["size", "screen size"]), ("C", ["form factor"])],
                     default_response="no idea", max_clarification_turns=10)


def test_keyword_substring_of_question_reveals_slot():
    user = ScriptedUser(SCRIPT)
    assert user.ask("What color?") == {"user_response": "answer A", "turns_remaining": 9}
    assert user.revealed_slot_ids == ["A"]
    assert user.log[-1].question == "What color?" and user.log[-1].slot_id == "A"


def test_short_word_inside_keyword_scores_one_point():
    # "for" (3 chars) is inside "form factor": the original's lenient +1.
    assert original_score("is it for travel?", {"is", "it", "for", "travel?"}, ["form factor"]) == 1
    user = ScriptedUser(SCRIPT)
    assert user.ask("Is it for travel?")["user_response"] == "answer C"


def test_words_shorter_than_three_chars_do_not_count():
    # "is" is inside "finish" but has only 2 characters.
    assert original_score("is it", {"is", "it"}, ["finish"]) == 0
    user = ScriptedUser(SCRIPT)
    assert user.ask("is it")["user_response"] == "no idea"
    assert user.revealed_slot_ids == [] and user.log[-1].slot_id is None


def test_punctuation_stays_attached_to_words():
    # "size?" is not inside "screen size", but "size" is a substring of the whole question (+2 each way).
    q = "screen size?"
    assert original_score(q, set(q.split()), ["size", "screen size"]) == 4
    # A keyword longer than the word with trailing punctuation: "colour?" neither contains nor is in "color".
    q = "colour?"
    assert original_score(q, set(q.split()), ["color"]) == 0


def test_scores_add_up_per_keyword():
    q = "do you have any preference for the material?"
    keywords = ["material", "material feature", "ingredients", "composition", "made of", "synthetic", "natural"]
    # "material" +2; "the" is inside "synthetic" +1; nothing else.
    assert original_score(q, set(q.split()), keywords) == 3


def test_tie_goes_to_earliest_slot_then_next():
    script = make_script([("X", ["battery"]), ("Y", ["battery life"]), ("Z", ["weight"])])
    user = ScriptedUser(script)
    question = "How is the battery life?"
    assert user.reveals(question) == "X"  # X: 2, Y: 2 -> earliest
    assert user.ask(question)["user_response"] == "answer X"
    assert user.ask(question)["user_response"] == "answer Y"  # revealed X is never matched again
    assert user.ask(question)["user_response"] == schema.DEFAULT_USER_RESPONSE
    assert user.revealed_slot_ids == ["X", "Y"]


def test_later_slot_with_strictly_higher_score_wins():
    script = make_script([("P", ["size"]), ("Q", ["size", "screen"])])
    user = ScriptedUser(script)
    assert user.ask("screen size?")["user_response"] == "answer Q"  # P: 2, Q: 4


def test_only_one_slot_revealed_per_question():
    script = make_script([("A", ["color"]), ("B", ["size"])])
    user = ScriptedUser(script)
    assert user.ask("color and size?")["user_response"] == "answer A"
    assert user.revealed_slot_ids == ["A"]


def test_keywords_are_lowercased():
    script = make_script([("A", ["USB-C"])])
    assert ScriptedUser(script).ask("Do you need usb-c charging?")["user_response"] == "answer A"


def test_exactly_100_chars_allowed_101_rejected_and_consumes_turn():
    user = ScriptedUser(SCRIPT)
    q100 = ("color " * 20)[:100]
    assert len(q100) == 100
    assert user.ask(q100)["user_response"] == "answer A"
    q101 = "size " + "x" * 96
    assert len(q101) == 101
    assert user.ask(q101) == {"user_response": TOO_LONG, "turns_remaining": 8}
    assert user.turns_used == 2 and "B" not in user.revealed_slot_ids
    assert user.log[-1].outcome == "too_long"


def test_turn_cap_refuses_even_matching_questions():
    script = make_script([("A", ["color"]), ("B", ["size"])], max_clarification_turns=2)
    user = ScriptedUser(script)
    assert user.ask("hello there")["turns_remaining"] == 1
    assert user.ask("what color")["turns_remaining"] == 0
    assert user.ask("what size") == {"user_response": TOO_MANY_TURNS, "turns_remaining": 0}
    assert user.ask("what size") == {"user_response": TOO_MANY_TURNS, "turns_remaining": 0}
    assert user.revealed_slot_ids == ["A"] and user.turns_used == 4


def test_fallbacks_when_keys_absent():
    script = schema.ClarificationScript.from_dict({"clarification_slots": []})
    user = ScriptedUser(script)
    assert user.max_turns == 10
    assert user.ask("anything?") == {"user_response": schema.DEFAULT_USER_RESPONSE, "turns_remaining": 9}
    assert schema.DEFAULT_USER_RESPONSE == "I'm not sure about that. Is there anything else you'd like to ask?"


def test_task_script_is_never_mutated_and_users_are_independent():
    script = make_script([("A", ["color"])])
    before = copy.deepcopy(script.to_dict())
    first, second = ScriptedUser(script), ScriptedUser(script)
    first.ask("color?")
    assert script.to_dict() == before
    assert second.reveals("color?") == "A" and second.turns_used == 0


def test_slot_already_revealed_in_script_never_matches():
    data = make_script([("A", ["color"]), ("B", ["colour"])]).to_dict()
    data["clarification_slots"][0]["revealed"] = True
    user = ScriptedUser(schema.ClarificationScript.from_dict(data))
    assert user.ask("what colour?")["user_response"] == "answer B"


def test_reveals_is_pure():
    user = ScriptedUser(SCRIPT)
    assert user.reveals("What color?") == "A"
    assert user.reveals("nothing here") is None
    assert user.turns_used == 0 and user.revealed_slot_ids == [] and user.log == []


def test_unknown_matcher_is_rejected():
    with pytest.raises(ValueError, match="unknown ask_user matcher 'fuzzy'"):
        ScriptedUser(SCRIPT, matcher="fuzzy")


def test_strict_matcher_ignores_short_words_inside_keywords():
    q = "is it for travel?"
    assert strict_score(q, set(q.split()), ["form factor"]) == 0
    assert strict_score("any screen sizes?", set(), ["screen size", "display"]) == 1  # plural word match
    assert strict_score("what screen size?", set(), ["screen size"]) == 2
    user = ScriptedUser(SCRIPT, matcher="strict")
    assert user.ask("Is it for travel?")["user_response"] == "no idea"
    assert user.ask("What form factor?")["user_response"] == "answer C"


def test_profile_response():
    persona = schema.Persona.from_dict({"user_id": "U1", "demographics": {"age": "30"},
                                        "product_requirements": {"brand": "Acme"}})
    assert profile_response(persona) == {"profile": persona.to_dict()}
    assert profile_response(persona)["profile"]["user_id"] == "U1"
    empty = schema.Persona.from_dict({})
    assert persona_is_empty(empty)
    assert profile_response(empty) == {"profile": {}, "message": "No user profile available"}
    assert profile_response(None) == {"profile": {}, "message": "No user profile available"}


# ---------------------------------------------------------------------------------------------------------
# Real released scripts
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_tasks(released_samples):
    return schema.read_tasks(released_samples)


def test_real_samples_loaded(real_tasks):
    assert real_tasks
    assert all(t.clarification_script.clarification_slots for t in real_tasks)


def test_real_first_keyword_question_reveals_a_slot(real_tasks):
    for task in real_tasks:
        script = task.clarification_script
        for slot in script.clarification_slots:
            question = f"What {slot.trigger_keywords[0]} do you want?"
            user = ScriptedUser(script)
            revealed = user.reveals(question)
            assert revealed is not None, (task.id, slot.slot_id, question)
            # Alone in a script, the slot is reached by its own first keyword.
            alone = schema.ClarificationScript.from_dict({"clarification_slots": [slot.to_dict()]})
            assert ScriptedUser(alone).ask(question)["user_response"] == slot.user_response, task.id


def test_real_scripts_fully_revealed_by_keyword_questions(real_tasks):
    for task in real_tasks:
        script = task.clarification_script
        user = ScriptedUser(script)
        for _ in script.clarification_slots:
            # Ask about the first still-hidden slot; its keyword scores >= 2 for it, so SOME hidden slot opens.
            hidden = next(s for s in script.clarification_slots if s.slot_id not in user.revealed_slot_ids)
            assert user.ask(f"What {hidden.trigger_keywords[0]} do you want?")["user_response"] != \
                script.default_response, task.id
        # Each question revealed one hidden slot, so n questions revealed all n slots.
        assert set(user.revealed_slot_ids) == {s.slot_id for s in script.clarification_slots}, task.id
        assert user.turns_remaining == script.max_clarification_turns - len(script.clarification_slots)
        assert all(s.revealed is False for s in script.clarification_slots)  # the task is untouched


def test_real_sample_hand_checked(real_tasks):
    task = next(t for t in real_tasks if t.id == "v3_sample_0001")
    user = ScriptedUser(task.clarification_script)
    # cl_1 scores 3 (see test_scores_add_up_per_keyword), cl_2 scores 0.
    answer = user.ask("do you have any preference for the material?")
    assert answer["user_response"].startswith("I prefer tools with natural material features")
    assert user.revealed_slot_ids == ["cl_1"]
    assert user.ask("Where will you use them?")["user_response"].startswith("I'm actually looking to use these in a salon")
    assert user.ask("Any color?") == {"user_response": task.clarification_script.default_response,
                                      "turns_remaining": 7}
