Duluth, Minnesota (CNN)A bulk carrier loaded with iron ore has been stuck in thick ice on Lake Superior for four days, and its owners said Thursday that it could be another week before the vessel reaches open water.

The Aurora Bay, operated by Northstar Freight Lines, left the port of Duluth bound for Ontario on Sunday but ran into a ridge of wind-driven ice about eight miles offshore.

Its captain, Harold Lindgren, told the company by radio that his crew of 22 were safe and cheerful and had plenty of food and fuel on board, according to a company spokeswoman, Janet Okonkwo.

Northstar's tugboats have tried to reach the ship without success. Okonkwo said relatives of the sailors were being kept informed by phone.

Lindgren remains calm, Okonkwo added. Could a sudden change in the wind set Aurora Bay free without any help from tugs?

Lindgren's wife told a local radio station that he had sailed through worse. Ice on the upper lakes can shift quickly when strong winds change direction.

The crew, Okonkwo insisted, had plenty of food and fuel. A spokesman for the Canadian port of Thunder Bay, Michel Desrosiers, said the cargo was expected.

Crews in Duluth are preparing another attempt once the wind drops.

@highlight

The Aurora Bay has been trapped in ice on Lake Superior for four days

@highlight

Northstar Freight Lines says the crew of 22 is safe

@highlight

The ship was carrying iron ore from Duluth to Ontario