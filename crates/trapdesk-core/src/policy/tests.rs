#![allow(clippy::panic)]

use super::*;

fn parse(text: &str) -> Result<Policy, String> {
    Policy::from_toml(text)
}

fn t<'a>(trapos_id: &'a str, id: u64, label: Option<&'a str>) -> Target<'a> {
    Target {
        trapos_id,
        id,
        label,
    }
}

const ISSUE_EXAMPLE: &str = r#"
[policy.default]
agent  = { exec = "allow", write = "allow", read = "allow" }
person = { exec = "allow", write = "allow", read = "allow" }

[[policy.rule]]
computer = "reactor*"
agent = { exec = "deny", write = "deny" }

[[policy.rule]]
computer = "test-*"
agent_name = "claude-code"
agent = { exec = "ask" }
"#;

#[test]
fn default_allows_everything() -> Result<(), String> {
    let p = parse("")?;
    assert_eq!(p, Policy::default());
    assert!(p.allows_everything());
    for a in Action::ALL {
        assert_eq!(
            p.decide(Party::Agent("x"), t("1:a", 1, Some("a")), a)
                .decision,
            Decision::Allow
        );
        assert_eq!(
            p.decide(Party::Person, t("1:a", 1, Some("a")), a).decision,
            Decision::Allow
        );
    }
    Ok(())
}

#[test]
fn the_issue_example_decides_as_written() -> Result<(), String> {
    let p = parse(ISSUE_EXAMPLE)?;
    assert!(!p.allows_everything());
    let reactor = t("5:reactor-main", 5, Some("reactor-main"));
    let d = p.decide(Party::Agent("anyone"), reactor, Action::Exec);
    assert_eq!(d.decision, Decision::Deny);
    assert_eq!(d.rule, Some(1));
    assert!(d.because.contains("rule 1"), "{}", d.because);
    assert!(d.because.contains("reactor*"), "{}", d.because);
    assert_eq!(
        p.decide(Party::Agent("anyone"), reactor, Action::Write)
            .decision,
        Decision::Deny
    );
    // The rule leaves read alone: the default decides.
    let d = p.decide(Party::Agent("anyone"), reactor, Action::Read);
    assert_eq!((d.decision, d.rule), (Decision::Allow, None));
    // The person is not an agent: agent rules do not touch them.
    assert_eq!(
        p.decide(Party::Person, reactor, Action::Exec).decision,
        Decision::Allow
    );

    let test = t("9:test-1", 9, Some("test-1"));
    assert_eq!(
        p.decide(Party::Agent("claude-code"), test, Action::Exec)
            .decision,
        Decision::Ask
    );
    // agent_name narrows the rule: another agent keeps the default.
    assert_eq!(
        p.decide(Party::Agent("codex"), test, Action::Exec).decision,
        Decision::Allow
    );
    assert_eq!(
        p.decide(Party::Agent("claude-code"), test, Action::Write)
            .decision,
        Decision::Allow
    );
    Ok(())
}

#[test]
fn later_rules_win_key_by_key() -> Result<(), String> {
    let p = parse(
        r#"
[policy.default]
agent = { exec = "deny" }
[[policy.rule]]
computer = "*"
agent = { exec = "ask", write = "deny" }
[[policy.rule]]
computer = "7"
agent = { exec = "allow" }
[[policy.rule]]
computer = "7:*"
person = { write = "ask" }
"#,
    )?;
    let seven = t("7:miner", 7, Some("miner"));
    let eight = t("8:farm", 8, Some("farm"));
    let a = Party::Agent("a");
    assert_eq!(p.decide(a, seven, Action::Exec).decision, Decision::Allow);
    assert_eq!(p.decide(a, seven, Action::Exec).rule, Some(2));
    assert_eq!(p.decide(a, eight, Action::Exec).decision, Decision::Ask);
    // Rule 2 does not set write: rule 1's deny still holds for 7.
    assert_eq!(p.decide(a, seven, Action::Write).decision, Decision::Deny);
    assert_eq!(p.decide(a, seven, Action::Write).rule, Some(1));
    assert_eq!(
        p.decide(Party::Person, seven, Action::Write).decision,
        Decision::Ask
    );
    assert_eq!(
        p.decide(Party::Person, eight, Action::Write).decision,
        Decision::Allow
    );
    assert_eq!(
        p.effective(a, seven),
        [Decision::Allow, Decision::Deny, Decision::Allow]
    );
    Ok(())
}

#[test]
fn computer_matches_trapos_id_id_or_label_with_globs() -> Result<(), String> {
    let p = parse(
        r#"
[[policy.rule]]
computer = "12"
agent = { read = "deny" }
[[policy.rule]]
computer = "base-?"
agent = { write = "deny" }
[[policy.rule]]
computer = "3:*"
agent = { exec = "deny" }
"#,
    )?;
    let a = Party::Agent("a");
    assert_eq!(
        p.decide(a, t("12:", 12, None), Action::Read).decision,
        Decision::Deny
    );
    assert_eq!(
        p.decide(a, t("112:", 112, None), Action::Read).decision,
        Decision::Allow
    );
    assert_eq!(
        p.decide(a, t("4:base-1", 4, Some("base-1")), Action::Write)
            .decision,
        Decision::Deny
    );
    assert_eq!(
        p.decide(a, t("4:base-12", 4, Some("base-12")), Action::Write)
            .decision,
        Decision::Allow
    );
    assert_eq!(
        p.decide(a, t("3:", 3, None), Action::Exec).decision,
        Decision::Deny
    );
    Ok(())
}

#[test]
fn unknown_keys_values_and_meaningless_rules_are_refused() {
    let cases = [
        ("[policy.default]\nagent = { exec = \"maybe\" }\n", "maybe"),
        ("[policy.default]\nagent = { run = \"allow\" }\n", "run"),
        ("[policy.default]\nrobot = { exec = \"allow\" }\n", "robot"),
        (
            "[[policy.rule]]\ncomputer = \"x\"\nagents = { exec = \"deny\" }\n",
            "agents",
        ),
        ("[[policy.rule]]\ncomputer = \"x\"\n", "sets nothing"),
        (
            "[[policy.rule]]\ncomputer = \"\"\nagent = { exec = \"deny\" }\n",
            "empty",
        ),
        (
            "[[policy.rule]]\nagent_name = \"a\"\nperson = { exec = \"deny\" }\n",
            "person",
        ),
        ("[policy]\nrules = []\n", "rules"),
    ];
    for (text, word) in cases {
        match parse(text) {
            Ok(p) => panic!("accepted {text:?}: {p:?}"),
            Err(e) => assert!(e.contains(word), "{text:?}: {e}"),
        }
    }
    let e = parse("[policy.default]\nagent = { exec = \"maybe\" }\n").err();
    let e = e.unwrap_or_default();
    assert!(
        e.contains("allow") && e.contains("ask") && e.contains("deny"),
        "{e}"
    );
}

#[test]
fn action_of_request_types() {
    use trapdesk_proto::protocol::Kind;
    // Written out kind by kind, not computed: this is the table a reviewer checks.
    let table = [
        (Kind::Ping, None),
        (Kind::ExecLua, Some(Action::Exec)),
        (Kind::RunFile, Some(Action::Exec)),
        // Typing can run anything.
        (Kind::Input, Some(Action::Exec)),
        (Kind::WriteFile, Some(Action::Write)),
        (Kind::MoveFile, Some(Action::Write)),
        (Kind::DeleteFile, Some(Action::Write)),
        (Kind::MakeDir, Some(Action::Write)),
        (Kind::ReadFile, Some(Action::Read)),
        (Kind::ListFiles, Some(Action::Read)),
        (Kind::FileInfo, Some(Action::Read)),
        (Kind::Screen, Some(Action::Read)),
        // Reading what is attached, a turtle's fuel and slots.
        (Kind::Peripherals, Some(Action::Read)),
        (Kind::Turtle, Some(Action::Read)),
        (Kind::ComputerOutput, Some(Action::Read)),
    ];
    for (kind, action) in table {
        assert_eq!(Action::of(kind), action, "{kind}");
    }
    for kind in Kind::ALL {
        assert!(
            table.iter().any(|(k, _)| *k == kind),
            "{kind} is missing from this table"
        );
    }
}

#[test]
fn person_typing_is_wait_unless_set_to_refuse() -> Result<(), String> {
    assert_eq!(parse("")?.person_typing, super::PersonTyping::Wait);
    assert_eq!(
        parse("[policy]\nperson_typing = \"refuse\"")?.person_typing,
        super::PersonTyping::Refuse
    );
    assert!(parse("[policy]\nperson_typing = \"sometimes\"").is_err());
    Ok(())
}

#[test]
fn the_decision_alone_is_the_one_decide_explains() -> Result<(), String> {
    // `decision` skips the words; it must never decide otherwise than `decide`.
    let p = parse(ISSUE_EXAMPLE)?;
    let targets = [
        t("1:reactor-1", 1, Some("reactor-1")),
        t("2:test-a", 2, Some("test-a")),
        t("3:miner", 3, Some("miner")),
        t("4", 4, None),
    ];
    for target in targets {
        for party in [
            Party::Person,
            Party::Agent("claude-code"),
            Party::Agent("other"),
        ] {
            for a in Action::ALL {
                assert_eq!(
                    p.decision(party, target, a),
                    p.decide(party, target, a).decision,
                    "{party:?} {a:?} on {}",
                    target.trapos_id
                );
            }
            assert_eq!(
                p.effective(party, target),
                Action::ALL.map(|a| p.decide(party, target, a).decision)
            );
        }
    }
    Ok(())
}
