//! The desk across a lost connection and a daemon restart: nothing prompted while
//! disconnected, a question asked again once (not twice when the daemon announces it again),
//! none for one decided meanwhile, a lost answer sent again, a budget pause dropped when its
//! run resumes.

use protocol::approval::ApprovalDecision::*;
use protocol::error::NOT_FOUND;
use protocol::event::Event;

use super::tests::{approval, budget_paused, desk, prompt, requested, resolved};
use super::*;

fn resumed() -> Event {
    Event::RunResumed {
        run_id: "run_1".to_owned(),
        attempt: 1,
        interrupted_tool_calls: Vec::new(),
    }
}

#[test]
fn a_prompt_cut_by_the_loss_is_shown_again_once_after_the_replay() {
    let mut desk = desk(Handling::Prompt);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        vec![prompt()]
    );
    assert_eq!(desk.connection_lost(), vec![DeskAction::ClosePrompt]);
    assert!(!desk.is_prompting());
    assert_eq!(desk.on_key(b'y'), [], "no prompt, no answer");
    desk.reconnected(7);
    assert_eq!(desk.caught_up(5), []);
    // The resumed run asks again with the same id: still the one question.
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        []
    );
    assert_eq!(desk.caught_up(7), vec![prompt()]);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        [],
        "not shown twice"
    );
    assert!(
        matches!(&desk.on_key(b'y')[..], [DeskAction::ClosePrompt, DeskAction::Respond { approval_id, .. }] if approval_id == "apr_1")
    );
}

#[test]
fn a_question_decided_while_away_is_not_asked_again() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    desk.connection_lost();
    desk.reconnected(3);
    assert_eq!(
        desk.on_event(&resolved("apr_1", Deny, "restart")),
        vec![DeskAction::Note(
            "approval apr_1: denied by restart".to_owned()
        )]
    );
    assert_eq!(desk.caught_up(3), []);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        [],
        "a decided approval is never asked again"
    );
}

#[test]
fn an_answer_lost_with_the_connection_is_sent_again_when_asked_again() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    desk.on_key(b'n');
    for key in b"tabs\r" {
        desk.on_key(*key);
    }
    // Its `approval/respond` broke with the connection: the desk is not told of a failure.
    desk.connection_lost();
    desk.reconnected(2);
    assert_eq!(desk.caught_up(2), []);
    let again = DeskAction::Respond {
        approval_id: "apr_1".to_owned(),
        decision: Deny,
        reason: Some("tabs".to_owned()),
        policy: None,
    };
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        vec![again.clone()]
    );
    // The daemon did not know it yet: kept, and sent when it asks.
    assert_eq!(
        desk.on_respond_error("apr_1", NOT_FOUND, "approval not found: apr_1"),
        []
    );
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        vec![again]
    );
    assert_eq!(
        desk.on_event(&resolved("apr_1", Deny, "client:agentctl")),
        vec![DeskAction::Note("approval apr_1: denied".to_owned())]
    );
}

#[test]
fn an_approval_whose_answer_failed_is_asked_anew_when_announced_again() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::All));
    let first = desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    assert_eq!(first.len(), 2, "{first:?}");
    // Refused by a stopping daemon: said, and forgotten.
    let failed = desk.on_respond_error("apr_1", protocol::error::SHUTTING_DOWN, "stopping");
    assert!(matches!(&failed[..], [DeskAction::Note(line)] if line.contains("cannot answer")));
    desk.connection_lost();
    desk.reconnected(4);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        first,
        "the policy answers it again"
    );
}

#[test]
fn a_budget_pause_from_before_the_restart_is_dropped_when_its_run_resumes() {
    let mut desk = desk(Handling::Prompt);
    assert!(matches!(
        &desk.on_event(&budget_paused("bud_1"))[..],
        [DeskAction::Prompt { .. }]
    ));
    desk.connection_lost();
    desk.reconnected(9);
    assert_eq!(desk.on_event(&resumed()), []);
    assert_eq!(desk.caught_up(9), [], "nothing left to ask");
    // The resumed run asks again, with a new request.
    assert!(matches!(
        &desk.on_event(&budget_paused("bud_2"))[..],
        [DeskAction::Prompt { .. }]
    ));
}

#[test]
fn a_budget_prompt_still_up_closes_when_its_run_resumes() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&budget_paused("bud_1"));
    assert_eq!(desk.on_event(&resumed()), vec![DeskAction::ClosePrompt]);
    assert!(!desk.is_prompting());
}

#[test]
fn an_approval_left_for_another_client_is_not_announced_again() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::Wait));
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![])))
            .len(),
        1
    );
    desk.connection_lost();
    desk.reconnected(4);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        []
    );
}
