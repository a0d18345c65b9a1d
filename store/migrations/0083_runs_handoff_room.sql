-- handoff_room: spaces a schedule-derived run reserves in its row when the
-- pre-read inserts it, given back by its hand-off (store.RunHandOff), which
-- writes the target and the longer state ('scheduled' -> 'dispatching'),
-- with some to spare for the outcome's short message.
-- Runs are inserted in id order into full pages; without the room every
-- hand-off grew its row, pages split under the hand-offs of a busy second,
-- and the splits serialized them (10,000 runs handed off 300 at a time, 3
-- statements at once: 129 ms with growth, 67 ms with the room; bench/stmt).
-- Only MySQL/MariaDB get the spaces: SQLite rewrites a row whatever its size.
ALTER TABLE runs ADD COLUMN handoff_room VARCHAR(255) NOT NULL DEFAULT '';
