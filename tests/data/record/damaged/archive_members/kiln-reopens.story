Potters in the town of Marlow Vale relit the Old Bottle Kiln on Friday for the first time since 1962, after the Marlow Vale Heritage Trust finished a five-year restoration. Trust chairman Graham Pell said the first firing had gone better than anyone expected.

Pell said the kiln would be fired four times a year for visitors.

@highlight

Old Bottle Kiln in Marlow Vale is fired again after sixty years