//! An MCP server's question (`elicitationRequested`) as a small form on the terminal: one
//! prompt per property of its schema, saying the type, the choices of an enum and the default;
//! Enter takes what was typed (or the default when nothing was), Esc declines, and so does an
//! empty answer to a required field without a default. Pure: keys in, what to show or send out.

use protocol::elicitation::{ElicitationAction, ElicitationRequest};
use serde_json::{Map, Value};

/// Longest answer a person may type for one field (bytes).
const ANSWER_MAX_BYTES: usize = 4000;

/// The form of one question, at its current field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Form {
    fields: Vec<Field>,
    at: usize,
    typed: Vec<u8>,
    answers: Map<String, Value>,
    /// Why the last answer was not taken, shown in the prompt.
    error: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct Field {
    name: String,
    /// `title`, else the name; `description` after it.
    label: String,
    kind: String,
    choices: Vec<Value>,
    default: Option<Value>,
    required: bool,
}

/// What a key did to the form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FormStep {
    /// Keep reading keys; the prompt now says this.
    Show(String),
    /// The form is done: send this answer.
    Done {
        action: ElicitationAction,
        content: Option<Map<String, Value>>,
    },
}

impl Form {
    pub(crate) fn new(request: &ElicitationRequest) -> Form {
        let schema = &request.requested_schema;
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = schema["properties"]
            .as_object()
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, property)| {
                        field(name, property, required.contains(&name.as_str()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Form {
            fields,
            at: 0,
            typed: Vec::new(),
            answers: Map::new(),
            error: None,
        }
    }

    /// The prompt of the current field, with what is typed so far.
    pub(crate) fn question(&self) -> String {
        let Some(field) = self.fields.get(self.at) else {
            return "send the answers? Enter sends, Esc declines: ".to_owned();
        };
        let mut hints = vec![field.kind.clone()];
        if !field.choices.is_empty() {
            let choices: Vec<String> = field.choices.iter().map(plain).collect();
            hints.push(format!("one of {}", choices.join(" | ")));
        }
        match &field.default {
            Some(default) => hints.push(format!("Enter: {}", plain(default))),
            None if field.required => hints.push("required".to_owned()),
            None => hints.push("Enter skips".to_owned()),
        }
        let error = self
            .error
            .as_ref()
            .map(|error| format!(" ({error})"))
            .unwrap_or_default();
        format!(
            "[{}/{}] {} ({}){error}, Esc declines: {}",
            self.at + 1,
            self.fields.len(),
            field.label,
            hints.join(", "),
            String::from_utf8_lossy(&self.typed)
        )
    }

    /// One key: Enter takes the field, Esc declines, Backspace and Ctrl-U edit.
    pub(crate) fn on_key(&mut self, key: u8) -> FormStep {
        match key {
            0x1b => {
                return FormStep::Done {
                    action: ElicitationAction::Decline,
                    content: None,
                };
            }
            b'\r' | b'\n' => return self.enter(),
            0x7f | 0x08 => while self.typed.pop().is_some_and(|byte| byte & 0xc0 == 0x80) {},
            0x15 => self.typed.clear(),
            0x00..=0x1f => {}
            _ if self.typed.len() < ANSWER_MAX_BYTES => self.typed.push(key),
            _ => {}
        }
        FormStep::Show(self.question())
    }

    fn enter(&mut self) -> FormStep {
        let Some(field) = self.fields.get(self.at) else {
            return self.done();
        };
        let typed = String::from_utf8_lossy(&self.typed).trim().to_owned();
        self.typed.clear();
        self.error = None;
        if typed.is_empty() {
            match &field.default {
                Some(default) => {
                    self.answers.insert(field.name.clone(), default.clone());
                }
                None if field.required => {
                    return FormStep::Done {
                        action: ElicitationAction::Decline,
                        content: None,
                    };
                }
                None => {}
            }
        } else {
            match parse(field, &typed) {
                Ok(value) => {
                    self.answers.insert(field.name.clone(), value);
                }
                Err(error) => {
                    self.error = Some(error);
                    return FormStep::Show(self.question());
                }
            }
        }
        self.at += 1;
        if self.at >= self.fields.len() {
            return self.done();
        }
        FormStep::Show(self.question())
    }

    fn done(&mut self) -> FormStep {
        FormStep::Done {
            action: ElicitationAction::Accept,
            content: Some(std::mem::take(&mut self.answers)),
        }
    }
}

fn field(name: &str, property: &Value, required: bool) -> Field {
    let kind = match property["type"].as_str() {
        Some(kind) => kind.to_owned(),
        None => "string".to_owned(),
    };
    let mut label = property["title"].as_str().unwrap_or(name).to_owned();
    if let Some(description) = property["description"].as_str() {
        label = format!("{label}: {description}");
    }
    let mut choices: Vec<Value> = property["enum"].as_array().cloned().unwrap_or_default();
    if choices.is_empty()
        && let Some(options) = property["oneOf"].as_array()
    {
        choices = options
            .iter()
            .filter_map(|o| o.get("const").cloned())
            .collect();
    }
    Field {
        name: name.to_owned(),
        label: crate::render::one_line(&label),
        kind,
        choices,
        default: property.get("default").cloned(),
        required,
    }
}

/// `typed` as the field's type, or why not.
fn parse(field: &Field, typed: &str) -> Result<Value, String> {
    let value = match field.kind.as_str() {
        "integer" => typed
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{typed:?} is not a whole number"))?,
        "number" => typed
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{typed:?} is not a number"))?,
        "boolean" => match typed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err(format!("{typed:?} is not yes or no")),
        },
        _ => Value::String(typed.to_owned()),
    };
    if !field.choices.is_empty() && !field.choices.contains(&value) {
        return Err(format!("{typed:?} is not one of the choices"));
    }
    Ok(value)
}

/// A JSON value as a person reads it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ElicitationRequest {
        ElicitationRequest {
            elicitation_id: "eli_1".into(),
            server: "s".into(),
            message: "Who?".into(),
            requested_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Your name"},
                    "age": {"type": "integer", "default": 30},
                    "colour": {"type": "string", "enum": ["red", "green"]}
                },
                "required": ["name"]
            }),
            tool_call_id: None,
            expires_at: "t".into(),
        }
    }

    fn keys(form: &mut Form, text: &str) -> FormStep {
        let mut step = FormStep::Show(String::new());
        for key in text.bytes() {
            step = form.on_key(key);
        }
        step
    }

    #[test]
    fn one_prompt_per_field_with_defaults_checks_and_choices() {
        let mut form = Form::new(&request());
        // In the server's order.
        assert_eq!(
            form.question(),
            "[1/3] name: Your name (string, required), Esc declines: "
        );
        assert!(
            matches!(keys(&mut form, "Adx\x7fa\r"), FormStep::Show(q) if q.starts_with("[2/3] age (integer, Enter: 30)"))
        );
        assert!(
            matches!(keys(&mut form, "old\r"), FormStep::Show(q) if q.contains("\"old\" is not a whole number"))
        );
        assert!(
            matches!(keys(&mut form, "\r"), FormStep::Show(q) if q.starts_with("[3/3] colour (string, one of red | green, Enter skips)"))
        );
        assert!(
            matches!(keys(&mut form, "blue\r"), FormStep::Show(q) if q.contains("not one of the choices"))
        );
        assert_eq!(
            keys(&mut form, "green\r"),
            FormStep::Done {
                action: ElicitationAction::Accept,
                content: Some(
                    json!({"name": "Ada", "age": 30, "colour": "green"})
                        .as_object()
                        .unwrap()
                        .clone()
                ),
            }
        );
    }

    #[test]
    fn esc_or_an_empty_required_field_declines() {
        let declined = FormStep::Done {
            action: ElicitationAction::Decline,
            content: None,
        };
        let mut form = Form::new(&request());
        assert_eq!(keys(&mut form, "4\x1b"), declined);
        let mut form = Form::new(&request());
        assert_eq!(keys(&mut form, "\r"), declined, "the name is required");
    }

    #[test]
    fn the_desk_asks_a_question_as_a_form_and_a_policy_declines_it() {
        use crate::approval_desk::{ApprovalDesk, DeskAction};
        use crate::approve_policy::{ApprovePolicy, Handling};
        let asked = protocol::event::Event::ElicitationRequested {
            run_id: "run_1".into(),
            request: request(),
        };
        let mut desk = ApprovalDesk::new("run_1".into(), Handling::Prompt);
        let actions = desk.on_event(&asked);
        assert!(
            matches!(&actions[..], [DeskAction::Prompt { header, question }]
                if header == "MCP server s asks: Who?" && question.starts_with("[1/3] name")),
            "{actions:?}"
        );
        assert!(desk.is_asking_question());
        let mut actions = Vec::new();
        for key in "Ada\r\r\r".bytes() {
            actions = desk.on_key(key);
        }
        assert_eq!(
            actions,
            vec![
                DeskAction::ClosePrompt,
                DeskAction::RespondQuestion {
                    elicitation_id: "eli_1".into(),
                    action: ElicitationAction::Accept,
                    content: Some(
                        json!({"name": "Ada", "age": 30})
                            .as_object()
                            .unwrap()
                            .clone()
                    ),
                }
            ]
        );
        let mut never = ApprovalDesk::new("run_1".into(), Handling::Policy(ApprovePolicy::Never));
        let actions = never.on_event(&asked);
        assert!(
            matches!(
                &actions[1],
                DeskAction::RespondQuestion {
                    action: ElicitationAction::Decline,
                    ..
                }
            ),
            "{actions:?}"
        );
    }
}
