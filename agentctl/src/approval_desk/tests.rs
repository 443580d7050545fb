//! The desk's answers to requests, keys, resolutions by others and failed answers.

use protocol::approval::ApprovalDecision::{self, *};
use protocol::approval::PendingApproval;
use protocol::event::{Event, RunStatus, Usage};

use super::*;

pub(super) fn approval(id: &str, tool: &str, options: Vec<ApprovalDecision>) -> PendingApproval {
    PendingApproval {
        session_rule: None,
        always_rule: None,
        task_id: None,
        agent_type: None,
        parent_run_id: None,
        approval_id: id.to_owned(),
        session_id: "ses_1".to_owned(),
        run_id: "run_1".to_owned(),
        tool_call_id: format!("call_{id}"),
        tool: tool.to_owned(),
        summary: "ls -la".to_owned(),
        input: serde_json::json!({}),
        reason: "shell commands ask".to_owned(),
        options,
        requested_at: "2026-11-30T09:00:00Z".to_owned(),
        expires_at: "2026-11-30T09:10:00Z".to_owned(),
    }
}

pub(super) fn requested(approval: PendingApproval) -> Event {
    Event::ApprovalRequested {
        run_id: approval.run_id.clone(),
        approval,
    }
}

pub(super) fn resolved(id: &str, decision: ApprovalDecision, by: &str) -> Event {
    Event::ApprovalResolved {
        run_id: "run_1".to_owned(),
        approval_id: id.to_owned(),
        tool_call_id: format!("call_{id}"),
        decision,
        decided_by: by.to_owned(),
        reason: None,
        session_rule: None,
    }
}

pub(super) fn desk(handling: Handling) -> ApprovalDesk {
    ApprovalDesk::new("run_1".to_owned(), handling)
}

pub(super) fn prompt() -> DeskAction {
    DeskAction::Prompt {
        header: "approval needed: run_shell ls -la\n  why: shell commands ask".to_owned(),
        question: "allow? [y]es once · [s]ession · [n]o · [c]ancel run ".to_owned(),
    }
}

#[test]
fn never_denies_with_one_line_and_a_reason_for_the_model() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::Never));
    let actions = desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    assert_eq!(
        actions,
        vec![
            DeskAction::Note(
                "approval apr_1: denied run_shell ls -la: agentctl run is not interactive \
                 (rerun with --approve edits|all, or --approve wait to answer from another \
                 terminal)"
                    .to_owned()
            ),
            DeskAction::Respond {
                approval_id: "apr_1".to_owned(),
                decision: Deny,
                reason: Some(crate::approve_policy::NOT_INTERACTIVE_REASON.to_owned()),
                policy: Some("--approve never".to_owned()),
            },
        ]
    );
    // Our own resolution is not announced again; a replayed request is not answered twice.
    assert_eq!(
        desk.on_event(&resolved("apr_1", Deny, "client:agentctl")),
        []
    );
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        []
    );
}

#[test]
fn wait_leaves_it_pending_and_announces_the_outcome() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::Wait));
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", vec![]))),
        vec![DeskAction::Note(
            "approval apr_1 waits: run_shell ls -la (shell commands ask); answer with \
             `agentctl approve apr_1` or `agentctl deny apr_1`"
                .to_owned()
        )]
    );
    assert_eq!(
        desk.on_event(&resolved("apr_1", AllowSession, "client:zed")),
        vec![DeskAction::Note(
            "approval apr_1: allowed for this session by client:zed".to_owned()
        )]
    );
}

#[test]
fn other_runs_are_not_ours() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::All));
    let mut other = approval("apr_9", "run_shell", vec![]);
    other.run_id = "run_9".to_owned();
    assert_eq!(desk.on_event(&requested(other)), []);
}

#[test]
fn a_child_task_of_our_run_is_answered_as_our_run_and_its_resolution_is_ours() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::All));
    let mut child = approval("apr_c", "write_file", vec![]);
    child.run_id = "run_child".to_owned();
    child.session_id = "ses_child".to_owned();
    child.task_id = Some("task_1".to_owned());
    child.agent_type = Some("general-purpose".to_owned());
    child.parent_run_id = Some("run_1".to_owned());
    let actions = desk.on_event(&requested(child.clone()));
    assert!(
        actions.contains(&DeskAction::Respond {
            approval_id: "apr_c".to_owned(),
            decision: AllowOnce,
            reason: None,
            policy: Some("--approve all".to_owned()),
        }),
        "{actions:?}"
    );
    // Its resolution (in the child's run) is the one we gave: nothing more to say.
    let mut done = resolved("apr_c", AllowOnce, "policy:agentctl");
    if let Event::ApprovalResolved { run_id, .. } = &mut done {
        *run_id = "run_child".to_owned();
    }
    assert_eq!(desk.on_event(&done), []);

    // A child of another run of the session is not ours.
    let mut stranger = child;
    stranger.approval_id = "apr_s".to_owned();
    stranger.run_id = "run_other_child".to_owned();
    stranger.parent_run_id = Some("run_0".to_owned());
    assert_eq!(desk.on_event(&requested(stranger)), []);
}

#[test]
fn a_child_task_is_answered_by_never_too() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::Never));
    let mut child = approval("apr_c", "run_shell", vec![]);
    child.run_id = "run_child".to_owned();
    child.task_id = Some("task_1".to_owned());
    child.parent_run_id = Some("run_1".to_owned());
    let actions = desk.on_event(&requested(child));
    assert!(
        actions.iter().any(|action| matches!(
            action,
            DeskAction::Respond { approval_id, decision: Deny, .. } if approval_id == "apr_c"
        )),
        "{actions:?}"
    );
}

#[test]
fn prompt_answers_by_key_and_queues_parallel_requests() {
    let options = vec![AllowOnce, AllowSession, Deny, DenyAndCancel];
    let mut desk = desk(Handling::Prompt);
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", options.clone()))),
        vec![prompt()]
    );
    assert!(desk.is_prompting());
    // A second request waits for the first answer.
    assert_eq!(
        desk.on_event(&requested(approval("apr_2", "run_shell", options))),
        []
    );
    // `a` is not offered; `x` means nothing.
    assert_eq!(desk.on_key(b'a'), []);
    assert_eq!(desk.on_key(b'x'), []);
    assert_eq!(
        desk.on_key(b'y'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id: "apr_1".to_owned(),
                decision: AllowOnce,
                reason: None,
                policy: None,
            },
            prompt(),
        ]
    );
    assert_eq!(
        desk.on_key(b'c'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id: "apr_2".to_owned(),
                decision: DenyAndCancel,
                reason: None,
                policy: None,
            },
        ]
    );
    assert!(!desk.is_prompting());
    // The answer is announced once the daemon has it, by whichever client name it carries.
    assert_eq!(
        desk.on_event(&resolved("apr_1", AllowOnce, "client:agentctl")),
        vec![DeskAction::Note("approval apr_1: allowed once".to_owned())]
    );
}

#[test]
fn another_clients_answer_closes_the_prompt() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    assert_eq!(
        desk.on_event(&resolved("apr_1", Deny, "client:zed")),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Note("approval apr_1: denied by client:zed".to_owned()),
        ]
    );
    assert!(!desk.is_prompting());
    assert_eq!(desk.on_key(b'y'), []);
}

#[test]
fn already_decided_is_said_calmly() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    desk.on_key(b'y');
    assert_eq!(
        desk.on_respond_error(
            "apr_1",
            ALREADY_DECIDED,
            "approval apr_1 is already decided"
        ),
        vec![DeskAction::Note(
            "approval apr_1 was already decided by someone else \
             (approval apr_1 is already decided)"
                .to_owned()
        )]
    );
    // The winner's resolution is announced.
    assert_eq!(
        desk.on_event(&resolved("apr_1", Deny, "timeout")),
        vec![DeskAction::Note(
            "approval apr_1: denied by timeout".to_owned()
        )]
    );
}

#[test]
fn run_end_interrupt_and_terminal_failure_close_the_prompt() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", vec![])));
    assert_eq!(desk.interrupt(), vec![DeskAction::ClosePrompt]);
    assert_eq!(desk.interrupt(), []);

    desk.on_event(&requested(approval("apr_2", "run_shell", vec![])));
    let finished = Event::RunFinished {
        run_id: "run_1".to_owned(),
        status: RunStatus::Cancelled,
        error: None,
        usage: Usage::default(),
        cost_usd: None,
    };
    assert_eq!(desk.on_event(&finished), vec![DeskAction::ClosePrompt]);

    let mut desk = super::ApprovalDesk::new("run_1".to_owned(), Handling::Prompt);
    desk.on_event(&requested(approval("apr_3", "run_shell", vec![])));
    let actions = desk.prompt_failed("not a terminal");
    assert_eq!(actions.len(), 2);
    assert!(
        matches!(&actions[1], DeskAction::Note(line) if line.starts_with("approval apr_3 waits"))
    );
    // Later approvals wait too, without prompting.
    assert!(matches!(
        &desk.on_event(&requested(approval("apr_4", "run_shell", vec![])))[..],
        [DeskAction::Note(line)] if line.starts_with("approval apr_4 waits")
    ));
}

#[test]
fn n_asks_for_a_reason_that_reaches_the_model() {
    let options = vec![AllowOnce, AllowSession, Deny, DenyAndCancel];
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&requested(approval("apr_1", "run_shell", options.clone())));
    let reprompt = |typed: &str| vec![DeskAction::Reprompt(format!("{REASON_QUESTION}{typed}"))];
    assert_eq!(desk.on_key(b'n'), reprompt(""));
    // Keys are the reason now, `y` included; Backspace takes a whole character back.
    for key in "no, usé".bytes() {
        desk.on_key(key);
    }
    assert_eq!(desk.on_key(0x7f), reprompt("no, us"));
    for key in "e tabsy".bytes() {
        desk.on_key(key);
    }
    assert_eq!(desk.on_key(0x1b), [], "control keys are ignored");
    assert_eq!(
        desk.on_key(b'\r'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id: "apr_1".to_owned(),
                decision: Deny,
                reason: Some("no, use tabsy".to_owned()),
                policy: None,
            },
        ]
    );
    // An empty reason denies without one.
    desk.on_event(&requested(approval("apr_2", "run_shell", options)));
    desk.on_key(b'n');
    assert_eq!(
        desk.on_key(b'\n'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id: "apr_2".to_owned(),
                decision: Deny,
                reason: None,
                policy: None,
            },
        ]
    );
}

#[test]
fn attach_prompts_for_what_is_still_pending_once_the_replay_is_through() {
    let options = vec![AllowOnce, AllowSession, Deny, DenyAndCancel];
    let mut desk = ApprovalDesk::for_session(Handling::Prompt, 5);
    let mut old = approval("apr_old", "run_shell", options.clone());
    old.run_id = "run_0".to_owned();
    // Replayed: an old request and its resolution, then a request still pending.
    let actions = desk.on_event(&requested(old));
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert!(matches!(&actions[0], DeskAction::Note(text) if text.starts_with("approval needed")));
    assert_eq!(desk.caught_up(2), []);
    let mut resolution = resolved("apr_old", Deny, "mode");
    if let Event::ApprovalResolved { run_id, .. } = &mut resolution {
        *run_id = "run_0".to_owned();
    }
    assert_eq!(
        desk.on_event(&resolution),
        vec![DeskAction::Note(
            "approval apr_old: denied by mode".to_owned()
        )]
    );
    assert_eq!(
        desk.on_event(&requested(approval("apr_1", "run_shell", options))),
        vec![DeskAction::Note(
            "approval needed: run_shell ls -la".to_owned()
        )]
    );
    assert!(!desk.is_prompting(), "held during the replay");
    // The prompt does not say again what the replay said: its details follow.
    let DeskAction::Prompt { question, .. } = prompt() else {
        unreachable!()
    };
    assert_eq!(
        desk.caught_up(5),
        vec![DeskAction::Prompt {
            header: "\n  why: shell commands ask".to_owned(),
            question,
        }]
    );
    // Another run's end leaves the prompt alone; its own run's end closes it.
    assert_eq!(
        desk.on_event(&Event::RunFinished {
            run_id: "run_0".to_owned(),
            status: RunStatus::Completed,
            error: None,
            usage: Usage::default(),
            cost_usd: None,
        }),
        []
    );
    assert_eq!(
        desk.on_event(&Event::RunFinished {
            run_id: "run_1".to_owned(),
            status: RunStatus::Cancelled,
            error: None,
            usage: Usage::default(),
            cost_usd: None,
        }),
        vec![DeskAction::ClosePrompt]
    );
}

#[test]
fn the_wait_line_does_not_repeat_the_summary_as_its_reason() {
    let mut desk = desk(Handling::Policy(ApprovePolicy::Wait));
    let mut asked = approval("apr_1", "run_shell", vec![]);
    asked.reason = "approval needed to run `ls -la`".to_owned();
    assert_eq!(
        desk.on_event(&requested(asked)),
        vec![DeskAction::Note(
            "approval apr_1 waits: run_shell ls -la; answer with `agentctl approve apr_1` or \
             `agentctl deny apr_1`"
                .to_owned()
        )]
    );
}

pub(super) fn budget_paused(id: &str) -> Event {
    Event::BudgetExceeded {
        run_id: "run_1".to_owned(),
        request: protocol::budget::BudgetRequest {
            request_id: id.to_owned(),
            budget: BudgetKind::Tokens,
            used: 1200.0,
            limit: 1000.0,
            suggested_limit: 2200.0,
            message: "this run has used 1200 tokens".to_owned(),
            expires_at: "2026-11-30T09:10:00Z".to_owned(),
            task_id: None,
            agent_type: None,
            parent_run_id: None,
        },
    }
}

#[test]
fn a_budget_pause_is_prompted_and_c_continues_s_stops() {
    let mut desk = desk(Handling::Prompt);
    let actions = desk.on_event(&budget_paused("bud_1"));
    assert_eq!(
        actions,
        vec![DeskAction::Prompt {
            header: "budget reached: this run has used 1200 tokens".to_owned(),
            question: "go on? [c]ontinue to 2200 tokens · [s]top ".to_owned(),
        }]
    );
    assert_eq!(desk.on_key(b'y'), Vec::new(), "not a budget key");
    assert_eq!(
        desk.on_key(b'c'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::RespondBudget {
                request_id: "bud_1".to_owned(),
                decision: BudgetDecision::Continue,
                policy: None,
            },
        ]
    );
    let resolved = Event::BudgetResolved {
        run_id: "run_1".to_owned(),
        request_id: "bud_1".to_owned(),
        decision: BudgetDecision::Continue,
        decided_by: "client:agentctl".to_owned(),
        new_limit: Some(2200.0),
    };
    assert_eq!(
        desk.on_event(&resolved),
        vec![DeskAction::Note(
            "budget bud_1: continued to 2200 tokens by client:agentctl".to_owned()
        )]
    );
    desk.on_event(&budget_paused("bud_2"));
    assert_eq!(
        desk.on_key(b'S'),
        vec![
            DeskAction::ClosePrompt,
            DeskAction::RespondBudget {
                request_id: "bud_2".to_owned(),
                decision: BudgetDecision::Stop,
                policy: None,
            },
        ]
    );
}

#[test]
fn a_policy_never_raises_a_budget_and_wait_leaves_it() {
    for policy in [
        ApprovePolicy::Never,
        ApprovePolicy::Edits,
        ApprovePolicy::All,
    ] {
        let actions = desk(Handling::Policy(policy)).on_event(&budget_paused("bud_1"));
        assert!(
            matches!(
                actions.last(),
                Some(DeskAction::RespondBudget {
                    decision: BudgetDecision::Stop,
                    policy: Some(_),
                    ..
                })
            ),
            "{policy:?}: {actions:?}"
        );
    }
    let actions = desk(Handling::Policy(ApprovePolicy::Wait)).on_event(&budget_paused("bud_1"));
    assert!(
        matches!(&actions[..], [DeskAction::Note(line)] if line.contains("bud_1 waits")
            && line.contains("`agentctl approve bud_1`")
            && line.contains("`agentctl deny bud_1`")),
        "{actions:?}"
    );
}

#[test]
fn a_budget_pause_decided_elsewhere_closes_the_prompt() {
    let mut desk = desk(Handling::Prompt);
    desk.on_event(&budget_paused("bud_1"));
    let actions = desk.on_event(&Event::BudgetResolved {
        run_id: "run_1".to_owned(),
        request_id: "bud_1".to_owned(),
        decision: BudgetDecision::Stop,
        decided_by: "client:editor".to_owned(),
        new_limit: None,
    });
    assert_eq!(
        actions,
        vec![
            DeskAction::ClosePrompt,
            DeskAction::Note("budget bud_1: stopped by client:editor".to_owned()),
        ]
    );
    assert!(!desk.is_prompting());
}
