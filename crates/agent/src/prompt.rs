//! The system prompt, assembled once when a session is created and frozen for its life (it is
//! stored in the session header), so every request of the session shares a byte-identical
//! prefix and provider prompt caches keep hitting.

use std::path::Path;

/// Project notes files read from the workspace and its parents up to the git root (the file
/// tools write them only after an approval naming them).
use agentd_core::workspace::NOTES_FILES;
/// Notes longer than this are cut: they go into every request.
const MAX_NOTES_CHARS: usize = 20_000;

const BASE_INSTRUCTIONS: &str = "\
You are agentd, a capable software agent working in the user's workspace. You think, act with \
tools, and observe the results until the task is done.

- Use the tools to inspect files before changing them; prefer small, precise edits (edit_file) \
over rewriting whole files.
- File tools only reach the workspace directory below; paths are relative to it.
- run_shell runs a command in the workspace with a timeout; check its exit code and output.
- When several independent read-only lookups are needed, call those tools together in one turn.
- A tool error is information: read it and correct the call rather than repeating it.
- When the task is done, answer concisely with what you did and what the user should know.";

/// Build the system prompt for a session in `cwd`, with the user's own notes file
/// (`user_notes`, e.g. `$XDG_CONFIG_HOME/agentd/AGENTS.md`) before the project's notes. Blocking
/// (reads notes files): call from `spawn_blocking` or before serving.
pub fn build(cwd: &Path, date: &str, user_notes: Option<&Path>) -> String {
    let mut prompt = String::from(BASE_INSTRUCTIONS);
    prompt.push_str(&context_sections(cwd, date, user_notes));
    prompt
}

/// What a session in `cwd` knows of where it works: the environment block (OS, shell,
/// workspace, date), the user's notes and the project's notes (outermost first), each section
/// led by a blank line. A top-level session's prompt has it after the instructions, a
/// subagent's after its definition's body, so a child knows what its parent knows of the
/// place. Blocking (reads notes files).
pub fn context_sections(cwd: &Path, date: &str, user_notes: Option<&Path>) -> String {
    let mut prompt = String::new();
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_owned());
    prompt.push_str("\n\n<environment>\n");
    prompt.push_str(&format!(
        "os: {} ({})\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    prompt.push_str(&format!("shell: {shell}\n"));
    prompt.push_str(&format!("workspace: {}\n", cwd.display()));
    prompt.push_str(&format!("date: {date}\n"));
    prompt.push_str("</environment>");
    if let Some((path, notes)) = user_notes.and_then(user_notes_file) {
        prompt.push_str(&format!(
            "\n\n<user_notes source=\"{}\">\n{}\n</user_notes>",
            path.display(),
            notes.trim()
        ));
    }
    for (path, notes) in project_notes(cwd) {
        prompt.push_str(&format!(
            "\n\n<project_notes source=\"{}\">\n{}\n</project_notes>",
            path.display(),
            notes.trim()
        ));
    }
    prompt
}

/// The agents catalogue: name and description of each subagent (built-ins first), with the
/// instruction to delegate with the `task` tool. Part of the frozen prompt of a top-level
/// session only: a subagent's own prompt never has it (no recursion).
pub fn agents_section(agents: &[agentd_work::agents::AgentDefinition]) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let mut section = String::from(
        "\n\n<available_agents>\nSubagents work on a task in their own fresh context and report back \
with one final message. Delegate with the task tool (prompt, agentType) when a task is \
self-contained or needs much searching or reading; give the subagent everything it needs in the \
prompt, since it sees nothing of this conversation. The default agentType is general-purpose.\n",
    );
    for agent in agents {
        section.push_str(&format!("- {}: {}\n", agent.name, agent.description));
    }
    section.push_str("</available_agents>");
    section
}

/// The user's notes file, when it exists, is theirs and is not empty (cut at
/// `MAX_NOTES_CHARS`, read like project notes: regular file only, bounded).
fn user_notes_file(path: &Path) -> Option<(std::path::PathBuf, String)> {
    match agentd_core::regular_file::read_own_text(path, MAX_NOTES_CHARS.saturating_mul(4)) {
        Ok(read) => {
            let text: String = read.text.chars().take(MAX_NOTES_CHARS).collect();
            (!text.trim().is_empty()).then(|| (path.to_path_buf(), text))
        }
        Err(error) => {
            if let Some(refusal) = agentd_core::regular_file::OtherUsersFile::of(&error) {
                tracing::warn!("user notes not used: {refusal}");
            }
            None
        }
    }
}

/// Text a client appends to a new session's system prompt (`appendSystemPrompt`).
pub fn appended_section(text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    format!(
        "\n\n<appended_instructions>\n{}\n</appended_instructions>",
        text.trim()
    )
}

/// Notes files from the git root (or as far up as the walk goes outside a repository) down to
/// `cwd`, outermost first. The directories are those of `workspace::project_dirs` (no
/// parent of another user); a notes file of another user is skipped, never read (a warning in
/// the log says which and what to do), and the next name in the same directory is tried.
fn project_notes(cwd: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut dirs = agentd_core::workspace::project_dirs(cwd).dirs;
    dirs.reverse();
    let mut notes = Vec::new();
    let mut budget = MAX_NOTES_CHARS;
    for dir in dirs {
        for name in NOTES_FILES {
            let path = dir.join(name);
            if budget == 0 {
                break;
            }
            // At most four bytes a character: enough bytes for the budget, never the whole of a
            // huge file, and a FIFO named AGENTS.md is refused instead of waited on.
            let read =
                match agentd_core::regular_file::read_own_text(&path, budget.saturating_mul(4)) {
                    Ok(read) => read,
                    Err(error) => {
                        if let Some(refusal) = agentd_core::regular_file::OtherUsersFile::of(&error)
                        {
                            tracing::warn!("project notes not used: {refusal}");
                        }
                        continue;
                    }
                };
            let text: String = read.text.chars().take(budget).collect();
            budget -= text.chars().count();
            notes.push((path, text));
            // AGENTS.md wins over CLAUDE.md in the same directory.
            break;
        }
    }
    notes
}

/// The curated memory block of the system prompt: both stores of `snapshot` with their usage
/// (taken at session creation and frozen with the rest of the prompt); none when memory is off.
pub fn memory_section(snapshot: &agentd_knowledge::memory::MemorySnapshot) -> String {
    if !snapshot.enabled {
        return String::new();
    }
    use agentd_knowledge::memory::{DELIMITER, Scope, StoreView, usage_text};
    let store = |view: &StoreView, what: &str| {
        let (shown, left_out) = view.entries.within(view.limit);
        let mut body = if shown.is_empty() {
            "(empty)".to_owned()
        } else {
            shown.as_slice().join(DELIMITER)
        };
        if left_out > 0 {
            body.push_str(&format!(
                "\n(entries not shown, the store being over its limit: {left_out}; merge or \
                 remove entries with the memory tool)"
            ));
        }
        format!(
            "\n\n## {} ({what}, {})\n{body}",
            view.target.file_name(),
            usage_text(view.entries.usage(), view.limit)
        )
    };
    let mut section = String::from(
        "\n\n<memory>\nYour long-term memory, kept across sessions with the memory tool. It is a \
         snapshot taken when this session started: what you save now shows in later sessions. \
         Save what the user should not have to say twice: corrections, preferences, facts about \
         their environment, project conventions.",
    );
    // Whose notes they are: the model saves a project's conventions in its own store.
    match (
        &snapshot.memory.location.scope,
        &snapshot.memory.location.project_root,
    ) {
        (Scope::Project, Some(root)) => section.push_str(&format!(
            "\nMEMORY.md is this project's ({}): other projects do not see it. USER.md is the \
             user's, seen in every project.",
            root.display()
        )),
        _ => section.push_str(
            "\nBoth stores are the user's, seen in every project: save no fact that holds for \
             one project only.",
        ),
    }
    section.push_str(&store(&snapshot.memory, "your notes"));
    section.push_str(&store(&snapshot.user, "the user's profile"));
    section.push_str("\n</memory>");
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_knowledge::skills::skills_section;

    #[test]
    fn includes_environment_and_project_notes_outermost_first() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "root notes").unwrap();
        let sub = root.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub notes").unwrap();
        let user = tempfile::tempdir().unwrap();
        let user_notes = user.path().join("AGENTS.md");
        std::fs::write(&user_notes, "the user's own notes").unwrap();
        let prompt = build(&sub, "2026-11-30", Some(&user_notes));
        assert!(prompt.contains("date: 2026-11-30"));
        assert!(prompt.contains(&format!("workspace: {}", sub.display())));
        let user_at = prompt.find("the user's own notes").unwrap();
        let root_at = prompt.find("root notes").unwrap();
        let sub_at = prompt.find("sub notes").unwrap();
        assert!(user_at < root_at && root_at < sub_at, "{prompt}");
        // No user notes file: no section.
        let without = build(&sub, "2026-11-30", Some(&user.path().join("missing.md")));
        assert!(!without.contains("<user_notes"), "{without}");
    }

    #[test]
    fn the_memory_section_shows_both_stores_with_usage() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let memory_dir = data.path().join("memory");
        std::fs::create_dir(&memory_dir).unwrap();
        std::fs::write(
            memory_dir.join("MEMORY.md"),
            "uses pnpm\n§\ntests: pnpm test\n",
        )
        .unwrap();
        let settings = agentd_knowledge::memory::MemorySettings {
            scope: agentd_knowledge::memory::Scope::User,
            ..Default::default()
        };
        let stores =
            agentd_knowledge::memory::MemoryStores::new(data.path(), data.path(), settings);
        let section = memory_section(&stores.snapshot(work.path()));
        assert!(section.contains("Both stores are the user's"), "{section}");
        assert!(
            section.contains(
                "## MEMORY.md (your notes, 28/2,200 chars)\nuses pnpm\n§\ntests: pnpm test"
            ),
            "{section}"
        );
        assert!(
            section.contains("## USER.md (the user's profile, 0/1,375 chars)\n(empty)"),
            "{section}"
        );
        assert!(section.ends_with("</memory>"));

        // A store over its limit (a hand edit) shows only what fits.
        let long = format!("{}\n§\nlast", "x".repeat(2_199));
        std::fs::write(memory_dir.join("MEMORY.md"), long).unwrap();
        let section = memory_section(&stores.snapshot(work.path()));
        assert!(
            section.contains("(your notes, 2,206/2,200 chars)"),
            "{section}"
        );
        assert!(
            section.contains("entries not shown, the store being over its limit: 1"),
            "{section}"
        );
        assert!(!section.contains("last"), "{section}");

        // Off: no section at all.
        let off = agentd_knowledge::memory::MemoryStores::new(
            data.path(),
            data.path(),
            agentd_knowledge::memory::MemorySettings {
                disabled: true,
                ..settings
            },
        );
        assert_eq!(memory_section(&off.snapshot(work.path())), "");
    }

    #[test]
    fn the_skills_section_lists_names_and_descriptions_only() {
        assert_eq!(skills_section(&[]), "");
        let skill = |name: &str, description: &str| agentd_knowledge::skills::Skill {
            name: name.to_owned(),
            description: description.to_owned(),
            path: std::path::PathBuf::from(format!("/p/{name}/SKILL.md")),
            source: agentd_knowledge::skills::SkillSource::Project,
            root: std::path::PathBuf::from("/p"),
        };
        let section =
            skills_section(&[skill("commit", "Write commits"), skill("pdf", "Fill forms")]);
        assert!(section.starts_with("\n\n<available_skills>\n"), "{section}");
        assert!(section.contains("call load_skill"), "{section}");
        assert!(
            section.ends_with("- commit: Write commits\n- pdf: Fill forms\n</available_skills>"),
            "{section}"
        );
        assert!(!section.contains("/p/"), "no paths: {section}");
    }

    #[test]
    fn the_prompt_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(build(dir.path(), "d", None), build(dir.path(), "d", None));
    }
}
