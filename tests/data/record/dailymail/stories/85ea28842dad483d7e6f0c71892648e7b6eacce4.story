By

Eleanor Pryce

PUBLISHED:

10:42 EST, 31 March 2015

|

UPDATED:

12:05 EST, 31 March 2015

A fisherman who landed more than 300 undersized lobsters in a single week has been ordered to pay £18,400 after a court heard he ‘knew exactly what he was doing’.

Declan Halloran, 54, from Newlyn in Cornwall, admitted 11 offences under fisheries law when he appeared before Truro Magistrates’ Court yesterday.

Prosecutor Helen Tregarthen said inspectors from the Cornish Inshore Fisheries Authority had found the shellfish hidden beneath crates of mackerel during a routine spot check on his boat as it came back into the harbour.

Mr Halloran, who has fished out of Newlyn for most of his life, told magistrates he had been struggling with debts.

Tregarthen told the bench that every lobster had been measured by hand.

Mr Halloran showed no emotion.

Why would an experienced skipper from Cornwall risk his licence for so little?

Undersized lobsters must be returned to the sea so that they can breed.

Mr Halloran knew exactly what he was doing, the court heard.

His solicitor, Graham Penrose of Plymouth, said his client deeply regretted the offences. A CIFA spokesman said patrols along the coast of Cornwall would now be stepped up.

The bench allowed Halloran's boat to stay in the harbour while he pays off the fine.

@highlight

Declan Halloran, 54, admitted 11 offences at Truro Magistrates’ Court

@highlight

Inspectors found more than 300 lobsters hidden beneath crates of mackerel

@highlight

Prosecutors said the practice threatens honest fishermen