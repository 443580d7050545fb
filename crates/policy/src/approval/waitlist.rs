//! Questions that wait for their first answer, by id: the table both brokers keep (tool
//! approvals here, budget pauses in `agentd_agent::budget_pause`). Registering a question hands
//! back the receiver its run waits on; the first answer removes it, wakes the run and is
//! remembered for a while, so a late answer can be told who decided instead of "not found".
//! Who may answer and what an answer does stay with each broker; the table holds no lock of
//! its own (its broker's mutex guards it).

use std::collections::{HashMap, VecDeque};

use tokio::sync::oneshot;

/// Decided questions remembered so a late answer is told "already decided", not "not found".
pub const REMEMBERED_DECISIONS: usize = 1024;

/// Pending questions `Q` answered by an `A`, keyed by id.
pub struct Waitlist<Q, A> {
    pending: HashMap<String, Entry<Q, A>>,
    /// The last [`REMEMBERED_DECISIONS`] answers, oldest first.
    decided: VecDeque<(String, A)>,
    next_order: u64,
}

struct Entry<Q, A> {
    question: Q,
    /// Registration order, for listing oldest first.
    order: u64,
    answer: oneshot::Sender<A>,
}

impl<Q, A> Default for Waitlist<Q, A> {
    fn default() -> Self {
        Waitlist {
            pending: HashMap::new(),
            decided: VecDeque::new(),
            next_order: 0,
        }
    }
}

impl<Q, A: Clone> Waitlist<Q, A> {
    /// Register question `id`; the receiver resolves with its answer.
    pub fn register(&mut self, id: String, question: Q) -> oneshot::Receiver<A> {
        let (answer, decided) = oneshot::channel();
        let order = self.next_order;
        self.next_order += 1;
        self.pending.insert(
            id,
            Entry {
                question,
                order,
                answer,
            },
        );
        decided
    }

    /// Pending question `id`.
    pub fn get(&self, id: &str) -> Option<&Q> {
        self.pending.get(id).map(|entry| &entry.question)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Q> {
        self.pending.get_mut(id).map(|entry| &mut entry.question)
    }

    pub fn is_pending(&self, id: &str) -> bool {
        self.pending.contains_key(id)
    }

    /// Answer pending question `id`: remove it, remember the answer and wake its waiter (which
    /// may have gone: the answer is still remembered). False when it was not pending.
    pub fn finish(&mut self, id: &str, answer: A) -> bool {
        let Some(entry) = self.pending.remove(id) else {
            return false;
        };
        if self.decided.len() >= REMEMBERED_DECISIONS {
            self.decided.pop_front();
        }
        self.decided.push_back((id.to_owned(), answer.clone()));
        let _ = entry.answer.send(answer);
        true
    }

    /// Remove question `id` unanswered (its run no longer waits); whether it was pending.
    pub fn withdraw(&mut self, id: &str) -> bool {
        self.pending.remove(id).is_some()
    }

    /// The remembered answer of question `id`, if it was decided not long ago.
    pub fn earlier(&self, id: &str) -> Option<&A> {
        self.decided
            .iter()
            .find(|(decided, _)| decided == id)
            .map(|(_, answer)| answer)
    }

    /// The pending questions `keep` accepts, oldest first.
    pub fn oldest_first(&self, keep: impl Fn(&Q) -> bool) -> Vec<&Q> {
        let mut entries: Vec<&Entry<Q, A>> = self
            .pending
            .values()
            .filter(|entry| keep(&entry.question))
            .collect();
        entries.sort_by_key(|entry| entry.order);
        entries.into_iter().map(|entry| &entry.question).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_answer_wakes_the_waiter_and_is_remembered() {
        let mut list: Waitlist<&str, u32> = Waitlist::default();
        let mut decided = list.register("q1".into(), "first");
        assert_eq!(list.get("q1"), Some(&"first"));
        assert!(list.finish("q1", 7));
        assert!(
            !list.finish("q1", 8),
            "a second answer finds nothing pending"
        );
        assert_eq!(decided.try_recv().unwrap(), 7);
        assert_eq!(list.earlier("q1"), Some(&7));
        assert!(!list.is_pending("q1"));
        assert_eq!(list.earlier("q2"), None);
    }

    #[test]
    fn lists_oldest_first_and_forgets_withdrawn_questions() {
        let mut list: Waitlist<u32, ()> = Waitlist::default();
        let _receivers: Vec<_> = [3, 1, 2]
            .into_iter()
            .map(|n| list.register(format!("q{n}"), n))
            .collect();
        assert_eq!(list.oldest_first(|_| true), [&3, &1, &2]);
        assert_eq!(list.oldest_first(|n| *n != 1), [&3, &2]);
        assert!(list.withdraw("q1"));
        assert!(!list.withdraw("q1"));
        assert_eq!(list.earlier("q1"), None, "withdrawn is not decided");
        assert_eq!(list.oldest_first(|_| true), [&3, &2]);
    }

    #[test]
    fn remembers_a_bounded_number_of_answers() {
        let mut list: Waitlist<(), usize> = Waitlist::default();
        for n in 0..=REMEMBERED_DECISIONS {
            let _decided = list.register(format!("q{n}"), ());
            list.finish(&format!("q{n}"), n);
        }
        assert_eq!(list.earlier("q0"), None, "the oldest was forgotten");
        assert_eq!(list.earlier("q1"), Some(&1));
        assert_eq!(
            list.earlier(&format!("q{REMEMBERED_DECISIONS}")),
            Some(&REMEMBERED_DECISIONS)
        );
    }
}
