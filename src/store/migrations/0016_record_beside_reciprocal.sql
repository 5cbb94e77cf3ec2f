-- Migration (issue 44, reciprocal as caller, witness-pool.md §6.4): the agent's `EXT/reciprocal`
-- answer ("scheduled", "declined", or whatever string it sent, clipped) to the `caller_card` a
-- scheduled a2a walk sent. The record has no field for it (the spec defines none), so it is kept
-- beside the record like the card checks; NULL when the walk sent no caller card or the agent
-- answered none.
ALTER TABLE record_beside ADD COLUMN reciprocal TEXT;
