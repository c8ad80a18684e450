Engineers in Tallinn closed the Kalev Harbour Bridge on Tuesday after inspectors from the Baltic Infrastructure Board found cracks in two of its steel cables. Mayor Liisa Tamm said the bridge would stay shut for at least three weeks while the repairs are planned.

The Baltic Infrastructure Board said the cracks were discovered during a routine inspection and that nobody had been hurt.

Commuters crowded onto ferries across the harbour as the city added extra boats for the morning rush.

Tamm promised that the Kalev Harbour Bridge would reopen before the summer tourist season.

@highlight

Kalev Harbour Bridge closed after inspectors found cracked cables

@highlight

Mayor Liisa Tamm says repairs will take at least three weeks