//! When each node-made value of a body goes: the walk's drop list ([`Reads`]), worked out from who produces what.

use super::scope::{Producers, Scope, NONE};

/// When each node-made value of a body has had its last reader. Once it has, its facts are dropped, so that
/// memory follows the graph's width, not its length: a chain of a million nodes holds a few values at a time
/// (bench/run.sh hostile measures it). Graph outputs are never dropped. The drops are worked out once, as a list
/// sorted by walk position, so that the walk itself does no more than one removal per value.
pub(super) struct Reads {
    /// (position in the walk after which the value goes, its slot), by position.
    drops: Vec<(u32, u32)>,
    next: usize,
}

impl Reads {
    /// From who produces what, the walk's order of nodes, and the slots of the body's outputs.
    pub(super) fn plan(producers: &Producers<'_>, scope: &Scope<'_>, order: &[usize], outputs: &[u32]) -> Reads {
        const KEPT: u32 = u32::MAX;
        let base = producers.base;
        // The walk's position of each node: its number, where the file is in order (as ONNX requires).
        let in_file_order = order.iter().enumerate().all(|(p, &i)| p == i);
        let mut position = Vec::new();
        if !in_file_order {
            position = vec![0; producers.first_output.len() - 1];
            for (p, &i) in order.iter().enumerate() {
                position[i] = p as u32;
            }
        }
        let at = |node: u32| if in_file_order { node } else { position[node as usize] };
        // A value nobody reads goes right after its producer; one that is read, after its last reader. Of the values
        // of one name, only the one the name stands for is followed (the last made, as for the walk's lookups):
        // where each name is made once at most, that is every value (an unnamed one is never defined, and its drop
        // finds nothing to drop), found without going through the names.
        let mut last: Vec<u32> = match scope.by_numbers() {
            true => producers.value_node.iter().map(|&node| at(node)).collect(),
            false => {
                let mut last = vec![KEPT; producers.value_node.len()];
                for &s in scope.names.values().filter(|&&s| s >= base) {
                    last[(s - base) as usize] = at(producers.value_node[(s - base) as usize]);
                }
                last
            }
        };
        for (p, &i) in order.iter().enumerate() {
            for s in producers.reads(i) {
                let l = &mut last[(s - base) as usize];
                *l = (*l).max(p as u32);
            }
        }
        for &s in outputs.iter().filter(|&&s| s != NONE && s >= base) {
            last[(s - base) as usize] = KEPT;
        }
        // In slot order, which is node order, and nearly by position where the file is in order: the stable sort has
        // little to do.
        let mut drops: Vec<(u32, u32)> =
            last.iter().enumerate().filter(|(_, &p)| p != KEPT).map(|(v, &p)| (p, base + v as u32)).collect();
        drops.sort_by_key(|&(p, _)| p);
        Reads { drops, next: 0 }
    }

    /// After the node at walk position `position` was walked: what nobody reads any more goes.
    #[inline]
    pub(super) fn after<'m>(&mut self, position: usize, scope: &mut Scope<'m>, producers: &Producers<'m>) {
        while let Some(&(p, s)) = self.drops.get(self.next) {
            if p as usize > position {
                break;
            }
            scope.drop_made(s, || producers.name(s));
            self.next += 1;
        }
    }
}
