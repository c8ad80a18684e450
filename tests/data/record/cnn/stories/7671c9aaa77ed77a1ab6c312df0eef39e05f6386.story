New Orleans (CNN)A vintage saxophone stolen from jazz musician Clarence Whitfield more than a decade ago has turned up in a pawn shop in Memphis, Tennessee, police said Saturday.

The instrument, a 1950s tenor with his initials scratched into the bell, vanished from a van parked outside a club in the French Quarter while Whitfield was loading equipment after a late show.

Detectives in Memphis traced it after a shop employee searched the serial number online and found an old appeal posted by the Crescent City Music Foundation, a charity Whitfield helped to set up for struggling local musicians and their families.

"I cried like a baby when they called," Whitfield said of the moment police from Memphis rang him.

Whitfield's family is planning a homecoming concert for the horn at a small bar near the river. Whitfield has not played it yet.

The pawnbroker in Memphis had bought it from a man who said it belonged to his late uncle. Who carried the saxophone all the way from New Orleans up to Tennessee?

Musicians often engrave or scratch marks into their instruments so that they can be identified if stolen. Whitfield was loading equipment after a late show when thieves broke into the van.

Saxophonist Delphine Arceneaux, who toured with him in Europe, called the recovery a small miracle. The club where he used to play has since closed down, Whitfield recalled.

@highlight

A tenor saxophone was stolen from Clarence Whitfield more than a decade ago

@highlight

A pawn shop worker in Memphis spotted the serial number in an online appeal

@highlight

The 71-year-old says the horn paid for his house