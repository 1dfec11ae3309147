//! Plan mode: a `<proposed_plan>` block of an answer streams as a plan item of its own.

/// A piece of a Plan-mode answer as it streams.
#[derive(Debug, PartialEq)]
pub(super) enum Seg {
    Answer(String),
    PlanStart,
    Plan(String),
}

/// Splits a streamed Plan-mode answer as codex does: a line `<proposed_plan>` opens a plan and a
/// line `</proposed_plan>` closes it (the tag lines and their newlines belong to neither); text
/// that may still become a tag line is held until it is or is not one.
#[derive(Default)]
pub(super) struct PlanSplit {
    in_plan: bool,
    mid_line: bool,
    pending: String,
}

impl PlanSplit {
    pub(super) fn feed(&mut self, chunk: &str) -> Vec<Seg> {
        let mut out = Vec::new();
        for c in chunk.chars() {
            if !self.mid_line || !self.pending.is_empty() {
                self.pending.push(c);
                let line = if self.in_plan {
                    "</proposed_plan>\n"
                } else {
                    "<proposed_plan>\n"
                };
                if self.pending == line {
                    self.pending.clear();
                    if !self.in_plan {
                        out.push(Seg::PlanStart);
                    }
                    self.in_plan = !self.in_plan;
                    self.mid_line = false;
                } else if line.starts_with(&self.pending) {
                    self.mid_line = true;
                } else {
                    let held = std::mem::take(&mut self.pending);
                    self.mid_line = !held.ends_with('\n');
                    self.text(&held, &mut out);
                }
                continue;
            }
            self.mid_line = c != '\n';
            self.text(&c.to_string(), &mut out);
        }
        out
    }

    /// The end of the answer: what was held is text after all.
    pub(super) fn finish(&mut self) -> Vec<Seg> {
        let mut out = Vec::new();
        let held = std::mem::take(&mut self.pending);
        self.text(&held, &mut out);
        out
    }

    fn text(&self, t: &str, out: &mut Vec<Seg>) {
        if t.is_empty() {
            return;
        }
        match (out.last_mut(), self.in_plan) {
            (Some(Seg::Plan(p)), true) | (Some(Seg::Answer(p)), false) => p.push_str(t),
            (_, true) => out.push(Seg::Plan(t.to_string())),
            (_, false) => out.push(Seg::Answer(t.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PlanSplit, Seg};

    fn split(chunks: &[&str]) -> Vec<Seg> {
        let mut p = PlanSplit::default();
        let mut out: Vec<Seg> = chunks.iter().flat_map(|c| p.feed(c)).collect();
        out.extend(p.finish());
        out
    }

    #[test]
    fn a_proposed_plan_is_split_off_the_answer_as_codex_streams_it() {
        // Recorded (31b): tag lines held across chunks, their newlines dropped.
        assert_eq!(
            split(&[
                "Intro.", "\n<prop", "osed_p", "lan>\nA", "\n</pro", "posed_", "plan>\n", "Outro."
            ]),
            vec![
                Seg::Answer("Intro.".into()),
                Seg::Answer("\n".into()),
                Seg::PlanStart,
                Seg::Plan("A".into()),
                Seg::Plan("\n".into()),
                Seg::Answer("Outro.".into()),
            ]
        );
        // Not a tag line: the held text is the answer's after all, at once or at the end.
        assert_eq!(
            split(&["<prop", "er>\n", "<pro"]),
            vec![Seg::Answer("<proper>\n".into()), Seg::Answer("<pro".into())]
        );
        // A tag in mid-line is text.
        assert_eq!(
            split(&["a <proposed_plan>\n"]),
            vec![Seg::Answer("a <proposed_plan>\n".into())]
        );
    }
}
