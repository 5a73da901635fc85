//! A server's questions (elicitation) during a call, a read or a prompt, as dialogs over the
//! screen: a form built from the requested schema (the call form's fields), answered with
//! Enter (checked against the schema first, as the host will), declined with Ctrl-D, cancelled
//! with Esc; a URL shown with the server's message, Enter opening it in the browser (as a
//! login does) and accepting, `d` declining. The [`Elicitor`] hands each question to the
//! console's loop and waits for the dialog's answer; a question whose request went away (the
//! call was cancelled) closes by itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;
use switchboard::host::Host;
use switchboard::interaction::{
    ElicitAnswer, Elicitation, ElicitationRequest, Elicitor, Interaction,
};
use tokio::sync::{mpsc, oneshot};

use super::form::{Form, FormKey};
use super::{Done, Theme};
use crate::output::{clean, clean_line};

/// The interaction of the console's requests: the host's (sampling, roots), with questions
/// asked in the console's dialogs.
pub(super) fn interaction(host: &Host, done: &mpsc::UnboundedSender<Done>) -> Interaction {
    Interaction {
        elicitor: Some(Arc::new(Asks { done: done.clone() })),
        ..host.interaction().clone()
    }
}

/// Hands questions to the console's loop ([`Done::Question`]) and waits for the answer.
struct Asks {
    done: mpsc::UnboundedSender<Done>,
}

impl Elicitor for Asks {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        let (tx, rx) = oneshot::channel();
        let sent = self
            .done
            .send(Done::Question(Box::new(Question::new(request.clone(), tx))));
        Box::pin(async move {
            match sent {
                // The console went away before answering: nobody decided.
                Ok(()) => rx.await.unwrap_or_else(|_| ElicitAnswer::cancel()),
                Err(_) => ElicitAnswer::cancel(),
            }
        })
    }

    fn completed(&self, server: &str, elicitation_id: &str) {
        let _ = self.done.send(Done::UrlCompleted {
            server: server.to_owned(),
            id: elicitation_id.to_owned(),
        });
    }
}

enum Body {
    Form {
        form: Form,
        schema: Value,
        error: Option<String>,
    },
    Url {
        url: String,
        id: String,
    },
}

/// One open question and where its answer goes.
pub(super) struct Question {
    server: String,
    tool: Option<String>,
    message: String,
    body: Body,
    answer: Option<oneshot::Sender<ElicitAnswer>>,
}

/// What a key on a question did.
pub(super) enum Answered {
    /// Still open.
    No,
    /// Answered, the dialog closes.
    Yes,
    /// Accepted a URL: open it in the browser.
    Open { server: String, url: String },
}

impl Question {
    fn new(request: ElicitationRequest, answer: oneshot::Sender<ElicitAnswer>) -> Question {
        let message = request.params.message().to_owned();
        let body = match request.params {
            Elicitation::Form {
                requested_schema, ..
            } => Body::Form {
                form: Form::from_schema(&requested_schema),
                schema: requested_schema,
                error: None,
            },
            Elicitation::Url {
                url,
                elicitation_id,
                ..
            } => Body::Url {
                url,
                id: elicitation_id,
            },
            // A kind this console does not know yet: nothing to fill in, only a decision.
            _ => Body::Form {
                form: Form::from_schema(&Value::Null),
                schema: serde_json::json!({"type": "object"}),
                error: None,
            },
        };
        Question {
            server: request.server,
            tool: request.tool,
            message,
            body,
            answer: Some(answer),
        }
    }

    /// The request that asked went away (its call was cancelled): nothing waits for this.
    pub(super) fn abandoned(&self) -> bool {
        self.answer.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    /// The server said this URL question is done (`notifications/elicitation/complete`).
    pub(super) fn is_url(&self, server: &str, id: &str) -> bool {
        matches!(&self.body, Body::Url { id: own, .. } if !own.is_empty() && own == id)
            && self.server == server
    }

    fn reply(&mut self, answer: ElicitAnswer) {
        if let Some(tx) = self.answer.take() {
            let _ = tx.send(answer);
        }
    }

    /// The server completed the URL question itself: it goes ahead.
    pub(super) fn complete(&mut self) {
        self.reply(ElicitAnswer::go_ahead());
    }

    pub(super) fn on_key(&mut self, key: KeyEvent) -> Answered {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('d') {
            self.reply(ElicitAnswer::decline());
            return Answered::Yes;
        }
        match &mut self.body {
            Body::Form {
                form,
                schema,
                error,
            } => match form.on_key(key.code) {
                FormKey::Stay => Answered::No,
                FormKey::Leave => {
                    self.reply(ElicitAnswer::cancel());
                    Answered::Yes
                }
                FormKey::Submit => {
                    let content = form.values().map(Value::Object).and_then(|content| {
                        switchboard::interaction::check_answer(schema, &content).map(|()| content)
                    });
                    match content {
                        Ok(content) => {
                            self.reply(ElicitAnswer::accept(content));
                            Answered::Yes
                        }
                        Err(e) => {
                            *error = Some(e);
                            Answered::No
                        }
                    }
                }
            },
            Body::Url { url, .. } => match key.code {
                KeyCode::Enter | KeyCode::Char('a' | 'o') => {
                    let url = url.clone();
                    self.reply(ElicitAnswer::go_ahead());
                    Answered::Open {
                        server: self.server.clone(),
                        url,
                    }
                }
                KeyCode::Char('d') => {
                    self.reply(ElicitAnswer::decline());
                    Answered::Yes
                }
                KeyCode::Esc => {
                    self.reply(ElicitAnswer::cancel());
                    Answered::Yes
                }
                _ => Answered::No,
            },
        }
    }

    pub(super) fn draw(&self, frame: &mut ratatui::Frame<'_>, theme: Theme) {
        let area = frame.area();
        let area = super::approval::centered(
            area,
            area.width.saturating_sub(8).max(40),
            area.height.saturating_sub(4).max(10),
        );
        frame.render_widget(Clear, area);
        let title = match &self.tool {
            Some(tool) => format!(
                " `{}` asks (during {}) ",
                clean_line(&self.server),
                clean_line(tool)
            ),
            None => format!(" `{}` asks ", clean_line(&self.server)),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.fg(Color::Cyan))
            .title(Span::styled(title, theme.title()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let message_height = u16::try_from(clean(&self.message).lines().count())
            .unwrap_or(u16::MAX)
            .clamp(1, 6);
        let [message_area, body_area, error_area, help_area] = Layout::vertical([
            Constraint::Length(message_height + 1),
            Constraint::Min(3),
            Constraint::Length(2),
            Constraint::Length(1),
        ])
        .areas(inner);
        frame.render_widget(
            Paragraph::new(clean(&self.message).into_owned()).wrap(Wrap { trim: false }),
            message_area,
        );
        let help = match &self.body {
            Body::Form { form, error, .. } => {
                form.draw(
                    frame,
                    body_area,
                    Block::default().borders(Borders::TOP).title(" Answer "),
                    theme,
                    true,
                    Vec::new(),
                );
                if let Some(error) = error {
                    frame.render_widget(
                        Paragraph::new(clean(error).into_owned())
                            .style(theme.fg(Color::Red))
                            .wrap(Wrap { trim: false }),
                        error_area,
                    );
                }
                "Tab/↑/↓ field · Space/←/→ choose · Enter accept · Ctrl-D decline · Esc cancel"
            }
            Body::Url { url, .. } => {
                frame.render_widget(
                    Paragraph::new(vec![
                        Line::from("It asks you to open this URL:"),
                        Line::from(""),
                        Line::from(Span::styled(
                            clean_line(url).into_owned(),
                            theme.fg(Color::Cyan),
                        )),
                    ])
                    .wrap(Wrap { trim: false }),
                    body_area,
                );
                "Enter open in the browser and accept · d decline · Esc cancel"
            }
        };
        frame.render_widget(
            Paragraph::new(help).style(theme.fg(Color::DarkGray)),
            help_area,
        );
    }
}
