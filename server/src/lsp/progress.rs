//! Work-done progress for a job (`window/workDoneProgress/create`, then `$/progress` begin,
//! reports and end), sent from a task of its own so that no handler and not the scheduler
//! waits for the client's answer. The progress is cancellable: the client's
//! `window/workDoneProgress/cancel` reaches the scheduler through a custom method route.

use tower_lsp::lsp_types::notification::Progress as ProgressNotification;
use tower_lsp::lsp_types::request::WorkDoneProgressCreate;
use tower_lsp::lsp_types::{
    NumberOrString, ProgressParams, ProgressParamsValue, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};
use tower_lsp::Client;

enum Msg {
    Report(String, u32),
    End(String),
}

pub struct Progress {
    tx: tokio::sync::mpsc::UnboundedSender<Msg>,
}

impl Progress {
    pub fn start(client: Client, token: NumberOrString, title: String) -> Progress {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            if client.send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams { token: token.clone() }).await.is_err() {
                return;
            }
            let send = |value: WorkDoneProgress| {
                let client = client.clone();
                let token = token.clone();
                async move {
                    client
                        .send_notification::<ProgressNotification>(ProgressParams { token, value: ProgressParamsValue::WorkDone(value) })
                        .await
                }
            };
            send(WorkDoneProgress::Begin(WorkDoneProgressBegin { title, cancellable: Some(true), message: None, percentage: Some(0) }))
                .await;
            while let Some(m) = rx.recv().await {
                match m {
                    Msg::Report(message, pct) => {
                        send(WorkDoneProgress::Report(WorkDoneProgressReport {
                            cancellable: Some(true),
                            message: Some(message),
                            percentage: Some(pct),
                        }))
                        .await
                    }
                    Msg::End(message) => {
                        send(WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(message) })).await;
                        return;
                    }
                }
            }
            // The job's owner went away without ending: end it anyway.
            send(WorkDoneProgress::End(WorkDoneProgressEnd { message: None })).await;
        });
        Progress { tx }
    }

    pub fn report(&self, message: String, percentage: u32) {
        let _ = self.tx.send(Msg::Report(message, percentage.min(100)));
    }

    pub fn end(&self, message: String) {
        let _ = self.tx.send(Msg::End(message));
    }
}
