//! Tests of skills discovery and loading on temp directory trees.

use super::*;
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: Option<&str>, description: Option<&str>, body: &str) -> String {
    let mut text = String::from("---\n");
    if let Some(name) = name {
        text.push_str(&format!("name: {name}\n"));
    }
    if let Some(description) = description {
        text.push_str(&format!("description: {description}\n"));
    }
    text.push_str("---\n");
    text.push_str(body);
    text
}

/// A repository `repo/` with a workspace `repo/app/` and a user skills dir beside them.
struct Tree {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    workspace: PathBuf,
    user: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let workspace = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    Tree {
        _dir: dir,
        repo,
        workspace,
        user: root.join("user-skills"),
    }
}

#[test]
fn discovery_walks_to_the_git_root_then_the_user_dir_nearer_wins() {
    let t = tree();
    write(
        &t.workspace.join("skills/pdf/SKILL.md"),
        &skill_md(None, Some("Fill PDF forms"), "near body"),
    );
    write(
        &t.repo.join(".agents/skills/pdf-far/SKILL.md"),
        &skill_md(Some("pdf"), Some("far pdf"), "far"),
    );
    write(
        &t.repo.join(".claude/skills/review/SKILL.md"),
        &skill_md(Some("review"), Some("Review a change"), "r"),
    );
    write(
        &t.user.join("commit/SKILL.md"),
        &skill_md(None, Some("Write commit messages"), "c"),
    );
    write(
        &t.user.join("review/SKILL.md"),
        &skill_md(None, Some("user review"), "u"),
    );
    // Above the git root: not part of the project.
    write(
        &t.repo.parent().unwrap().join("skills/outside/SKILL.md"),
        &skill_md(None, Some("x"), ""),
    );

    let catalogue = discover(&t.workspace, Some(&t.user), &SkillLimits::default());
    let found: Vec<(&str, &str, SkillSource)> = catalogue
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
        .collect();
    assert_eq!(
        found,
        [
            ("commit", "Write commit messages", SkillSource::User),
            ("pdf", "Fill PDF forms", SkillSource::Project),
            ("review", "Review a change", SkillSource::Project),
        ]
    );
    assert_eq!(catalogue.warnings.len(), 2, "{:?}", catalogue.warnings);
    assert!(
        catalogue.warnings[0].contains("skill `pdf`") && catalogue.warnings[0].contains("pdf-far"),
        "{:?}",
        catalogue.warnings
    );
    assert!(
        catalogue.warnings[1].contains("skill `review`")
            && catalogue.warnings[1].contains("user-skills"),
        "{:?}",
        catalogue.warnings
    );
}

#[test]
fn a_skill_without_description_or_with_bad_frontmatter_is_skipped_with_a_warning() {
    let t = tree();
    write(
        &t.workspace.join("skills/nodesc/SKILL.md"),
        &skill_md(Some("nodesc"), None, "body"),
    );
    write(
        &t.workspace.join("skills/broken/SKILL.md"),
        "---\nname: broken\n",
    );
    write(
        &t.workspace.join("skills/ok/SKILL.md"),
        &skill_md(None, Some("Fine"), "body"),
    );
    std::fs::create_dir_all(t.workspace.join("skills/not-a-skill")).unwrap();
    let catalogue = discover(&t.workspace, None, &SkillLimits::default());
    assert_eq!(catalogue.names(), "ok");
    assert_eq!(catalogue.warnings.len(), 2, "{:?}", catalogue.warnings);
    assert!(
        catalogue
            .warnings
            .iter()
            .any(|w| w.contains("broken") && w.contains("never closed")),
        "{:?}",
        catalogue.warnings
    );
    assert!(
        catalogue
            .warnings
            .iter()
            .any(|w| w.contains("nodesc") && w.contains("no description")),
        "{:?}",
        catalogue.warnings
    );
}

#[test]
fn reads_are_bounded_in_size_and_count() {
    let t = tree();
    let limits = SkillLimits {
        max_file_bytes: 100,
        max_skills: 2,
        max_files_read: 5,
        ..SkillLimits::default()
    };
    write(
        &t.workspace.join("skills/big/SKILL.md"),
        &skill_md(None, Some("big"), &"x".repeat(200)),
    );
    for name in ["a", "b", "c", "d"] {
        write(
            &t.workspace.join(format!("skills/{name}/SKILL.md")),
            &skill_md(None, Some("d"), ""),
        );
    }
    // Read in name order: a, aa-fifo, b, big, c; d is past `max_files_read`, c past
    // `max_skills`.
    let fifo = t.workspace.join("skills/aa-fifo/SKILL.md");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    agentd_core::test_support::mkfifo(&fifo);
    let catalogue = discover(&t.workspace, None, &limits);
    assert_eq!(catalogue.names(), "a, b");
    let warnings = catalogue.warnings.join("\n");
    assert!(warnings.contains("larger than"), "{warnings}");
    assert!(warnings.contains("named pipe"), "{warnings}");
    assert!(
        warnings.contains("2 more skills were not used"),
        "{warnings}"
    );
}

#[test]
fn load_returns_the_body_and_the_other_files_and_names_the_skills_it_knows() {
    let t = tree();
    let dir = t.workspace.join("skills/report");
    write(
        &dir.join("SKILL.md"),
        &skill_md(None, Some("Weekly report"), "\n# Steps\nUse template.md\n"),
    );
    write(&dir.join("template.md"), "t");
    write(&dir.join("scripts/fill.sh"), "s");
    write(&dir.join(".hidden"), "h");
    let limits = SkillLimits::default();
    let catalogue = discover(&t.workspace, None, &limits);
    let loaded = load(&catalogue, "report", &limits).unwrap();
    assert_eq!(loaded.body, "# Steps\nUse template.md\n");
    assert_eq!(
        loaded.files,
        [dir.join("scripts/fill.sh"), dir.join("template.md")]
    );
    let text = render(&loaded, &t.workspace);
    assert_eq!(
        text,
        "[skill] report\n\n# Steps\nUse template.md\n\nOther files of this skill (in skills/report); read them when the instructions need them:\n- skills/report/scripts/fill.sh\n- skills/report/template.md\n"
    );
    assert!(is_skill_result("load_skill", &text));
    assert!(!is_skill_result("run_shell", &text));

    // Seen from a workspace below the skill: its files are outside, read with run_shell.
    let inner = t.workspace.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let text = render(&loaded, &inner);
    assert!(
        text.contains(&format!(
            "Other files of this skill (in {}); they are outside the workspace: read them with run_shell",
            dir.display()
        )),
        "{text}"
    );

    let err = load(&catalogue, "nope", &limits).unwrap_err();
    assert_eq!(err, "no skill named `nope`; available skills: report");
}

/// `name: leak` skill text: read whole, it would be a usable skill.
fn leaked_skill() -> String {
    skill_md(Some("leak"), Some("looks harmless"), "SECRET BODY")
}

#[test]
fn skills_never_follow_a_symlink_out_of_the_project_or_the_user_config_dir() {
    let t = tree();
    let outside = t.repo.parent().unwrap().join("outside");
    write(&outside.join("evil/SKILL.md"), &leaked_skill());
    write(&outside.join("secret.md"), &leaked_skill());
    // A skill directory, a SKILL.md and a whole skills directory linked out of the repository.
    std::fs::create_dir_all(t.workspace.join("skills")).unwrap();
    std::os::unix::fs::symlink(outside.join("evil"), t.workspace.join("skills/evil")).unwrap();
    std::fs::create_dir_all(t.repo.join(".agents/skills/linked")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("secret.md"),
        t.repo.join(".agents/skills/linked/SKILL.md"),
    )
    .unwrap();
    std::fs::create_dir_all(t.repo.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&outside, t.repo.join(".claude/skills")).unwrap();
    // The user's skills (`config/skills`): one linked out of the config dir.
    let user_skills = t.repo.parent().unwrap().join("config/skills");
    std::fs::create_dir_all(&user_skills).unwrap();
    std::os::unix::fs::symlink(outside.join("evil"), user_skills.join("evil")).unwrap();
    // A link that stays inside the repository still works.
    write(
        &t.repo.join("tools/review/SKILL.md"),
        &skill_md(Some("review"), Some("Review a change"), "r"),
    );
    std::os::unix::fs::symlink(
        t.repo.join("tools/review"),
        t.workspace.join("skills/review"),
    )
    .unwrap();

    let catalogue = discover(&t.workspace, Some(&user_skills), &SkillLimits::default());
    let names: Vec<_> = catalogue.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["review"], "{:?}", catalogue.warnings);
    let warned = catalogue.warnings.join("\n");
    for path in [
        t.workspace.join("skills/evil"),
        t.repo.join(".agents/skills/linked/SKILL.md"),
        t.repo.join(".claude/skills"),
        user_skills.join("evil"),
    ] {
        assert!(
            warned.contains(&format!("{} leads to", path.display())),
            "{}: {warned}",
            path.display()
        );
    }
    assert!(warned.contains("through a symbolic link"), "{warned}");
    assert!(!warned.contains("SECRET"), "{warned}");
}

#[test]
fn a_loaded_skill_lists_no_file_that_leads_out_of_the_project() {
    let t = tree();
    let outside = t.repo.parent().unwrap().join("outside");
    write(&outside.join("id_ed25519"), "key");
    write(
        &t.workspace.join("skills/report/SKILL.md"),
        &skill_md(None, Some("Write a report"), "body"),
    );
    write(&t.repo.join("templates/report.md"), "t");
    std::os::unix::fs::symlink(
        outside.join("id_ed25519"),
        t.workspace.join("skills/report/key"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        t.repo.join("templates/report.md"),
        t.workspace.join("skills/report/template.md"),
    )
    .unwrap();
    let limits = SkillLimits::default();
    let catalogue = discover(&t.workspace, None, &limits);
    let loaded = load(&catalogue, "report", &limits).unwrap();
    assert_eq!(
        loaded.files,
        [t.workspace.join("skills/report/template.md")]
    );

    // Swapped for a link out after discovery: load refuses it too.
    std::fs::remove_file(t.workspace.join("skills/report/SKILL.md")).unwrap();
    write(&outside.join("SKILL.md"), &leaked_skill());
    std::os::unix::fs::symlink(
        outside.join("SKILL.md"),
        t.workspace.join("skills/report/SKILL.md"),
    )
    .unwrap();
    let error = load(&catalogue, "report", &limits).unwrap_err();
    assert!(error.contains("through a symbolic link"), "{error}");
    assert!(!error.contains("SECRET"), "{error}");
}
